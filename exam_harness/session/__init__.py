"""One command's session below the front ends: the registries a hook relay fills (registries.py) and an exam's
inputs, grades and plan as ``evaluate`` obtains them (grades.py), shared by the subcommands that grade as it does
(analyze, calibrate, grade, label) and by the in-tree features that run an exam themselves (AutoJudge's judge).
"""
