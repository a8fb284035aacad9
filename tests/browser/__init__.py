"""The course as a learner sees it: every chapter
run and clicked in JupyterLab in headless Chromium.

A package (not a bare folder) so that its conftest does not shadow tests/conftest.py.
"""
