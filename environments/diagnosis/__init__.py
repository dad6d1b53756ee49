"""Failure diagnosis, pure Python: why an episode failed and what the rest of it was built on.

- credit_graph: step dependency graph from the environment's events, and PageRank-style step credit.
- branching:    branch an episode at step k; verify a correction against an original-action retry.
- pivotal:      the earliest step after which an anchor taking over can no longer pass.
- model_diagnoser / rules: diagnoses from any policy (validated structured answers) or from an anchor.
- exports:      diagnosis and recovery views as canonical records for training.

Imports neither Django nor torch; lab/diagnoses stores what these compute.
"""
