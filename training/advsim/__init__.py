"""AdvSim2Real: an injection adversary, a task curriculum and the agent co-evolving in a simulator, evaluated in
the real world (issue 28). Django-free; the recipe is training/recipes/advsim.py, the experiment
training/experiments/advsim.py.

    adapters.py   one per environment (service desk, StoreBench): goals, slots, framings, the curriculum's knobs, worlds
    roles.py      categorical roles (the adversary's templated components, the curriculum's knobs), REINFORCE
    rewards.py    the flip reward (k samples per side, judged on success rates) and the curriculum's 1 - 2|p - 0.5|
    worlds.py     simulator and real world (the service desk: rule-based vs model caller; StoreBench: engine 1.0.0
                  vs 2.0.0); model and scripted players
    play.py       one round's clean/injected pairs, records linked by ids
    evaluate.py   completion with and without attacks in both worlds, and the sim-to-real gap
    store.py      per-round state on disk
    writer.py     the free-text adversary (a language model; the GPU configuration)
"""
