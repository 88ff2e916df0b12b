"""The fuzz/mutation corpus: damaged, special and hostile inputs for every command.

``corpus`` builds the cases, ``execute`` runs one command on one case in a child process
and ``classify`` says what went wrong; ``run.py`` runs the whole set (or a sample).
See docs/hardening.md.
"""
