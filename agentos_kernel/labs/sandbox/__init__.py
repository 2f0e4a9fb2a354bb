"""Running a student's code confined: a fresh copy, a timeout, no network, no reads or writes
outside its box (namespaces, Landlock, rlimits, an audit hook), each protection reported held
or missing. `_confine.py` and `_audit_site.py` run inside the box and import nothing from here.
"""
