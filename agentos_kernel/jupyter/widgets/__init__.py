"""The workbench's widgets (ipywidgets, imported on use): the LayerStepper and ReplayScrubber,
the LiveStepper, snapshot tables and the LogDiff view.
"""
