import math
import random

import pytest

from environments.riskprobe.cara import certainty_equivalent
from environments.riskprobe.fit import A_BOUNDS, Decision, fit_cara, logit_choice
from environments.riskprobe.probes import make_probe


def decisions_of(choose, count=200, families=("lottery", "insurance")):
    """Decisions on the training families' probes, each chosen by choose(options) -> option index or weights."""
    out = []
    for seed in range(count):
        options = tuple(lottery for _, lottery in make_probe(families[seed % len(families)], seed).options)
        choice = choose(options)
        weights = choice if isinstance(choice, tuple) else tuple(1.0 if k == choice else 0.0 for k in range(len(options)))
        out.append(Decision(options, weights))
    return out


def logit_agent(a, precision, seed=0):
    rng = random.Random(seed)
    return lambda options: rng.choices(range(len(options)), weights=logit_choice(a, precision, options))[0]


def argmax_agent(a):
    return lambda options: max(range(len(options)), key=lambda k: certainty_equivalent(a, options[k]))


def test_logit_choice_matches_hand_computed_probabilities():
    assert logit_choice(0.0, 1.0, [((1.0, 50.0),), ((0.5, 100.0), (0.5, 0.0))]) == pytest.approx([0.5, 0.5])
    # CEs 100 and 0 over a stake scale of 100 at precision 2: e^2 / (e^2 + 1)
    assert logit_choice(0.3, 2.0, [((1.0, 100.0),), ((1.0, 0.0),)])[0] == pytest.approx(math.exp(2) / (math.exp(2) + 1))


def test_choice_probabilities_of_a_known_agent_give_back_its_a_and_precision():
    fit = fit_cara(decisions_of(lambda options: tuple(logit_choice(0.002, 20.0, options))))
    assert fit.a == pytest.approx(0.002, abs=5e-5)
    assert fit.precision == pytest.approx(20.0, rel=0.02)
    assert fit.low < 0.002 < fit.high and fit.high - fit.low < 0.001


@pytest.mark.parametrize("a", [0.002, 0.008, 0.0])
def test_sampled_choices_of_a_synthetic_agent_recover_its_a_within_tolerance(a):
    fit = fit_cara(decisions_of(logit_agent(a, 20.0), count=240))
    assert fit.a == pytest.approx(a, abs=0.0008)
    assert fit.low <= a <= fit.high
    assert fit.censored == (False, False)


def test_an_agent_choosing_by_one_a_is_fully_consistent_and_a_random_one_is_not():
    consistent = fit_cara(decisions_of(argmax_agent(0.004)))
    assert consistent.consistency == 1.0 and consistent.agreement == 1.0
    assert consistent.low <= 0.004 <= consistent.high
    noise = fit_cara(decisions_of(lambda options, rng=random.Random(5): rng.randrange(len(options))))
    assert noise.consistency < 0.75 and noise.precision < consistent.precision


def test_an_agent_that_always_gambles_has_an_interval_open_towards_risk_seeking():
    fit = fit_cara(decisions_of(lambda options: 1, families=("lottery",)))  # "gamble" is option 1 of every lottery
    assert fit.censored[0] and fit.low == A_BOUNDS[0]
    assert fit.a < 0
