"""placeholder"""
FAULTS = []
CONTROLS = []
