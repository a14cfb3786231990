"""Tools for MSL kernel bodies: translate and compile them without running.

    python -m alloy.msl --help
"""
