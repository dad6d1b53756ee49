"""RAISED's helpers (issue 18, part C); the recipe is training/recipes/raised.py, the experiment
training/experiments/raised.py.

    pairs.py      (clean, injected) variants of one anchor trajectory, tokenized and aligned by agent turn
    evaluate.py   the attack axis' figures from greedy play, output drift from the start model, `ModelPolicy`
"""
