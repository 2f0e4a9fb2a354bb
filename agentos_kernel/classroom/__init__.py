"""A class: simulated classes and the instructor's views of a class's sessions (notebook 12),
and the JupyterHub spawn hook (`deploy/jupyterhub_config.py`).

May import: the composition root (`kernel`) and every layer below it; never `jupyter` or `cli`.
"""
