"""benchmarks/seeds.py's summary line: a seed still short of the target is a lower bound, never a result."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_seeds_script():
    spec = importlib.util.spec_from_file_location("seeds_script", os.path.join(ROOT, "benchmarks", "seeds.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_median_and_worst_count_unfinished_seeds_as_lower_bounds():
    median_and_worst = load_seeds_script().median_and_worst
    # all reached: exact
    assert median_and_worst([(121, True), (84, True), (60, True)]) == (84, True, 121, True)
    # an unfinished seed below the middle can still move the median up: not exact, and the worst is unknown
    assert median_and_worst([(121, True), (84, True), (2, False)]) == (84, False, 121, False)
    # an unfinished seed already above the middle cannot lower or change it
    assert median_and_worst([(121, True), (84, True), (200, False)]) == (121, True, 200, False)
    # even count: the mean of the two middle seeds, exact only when both are settled
    assert median_and_worst([(50, True), (84, True), (90, False), (121, True)]) == (87, False, 121, False)
    assert median_and_worst([(50, True), (84, True), (90, True), (121, False)]) == (87, True, 121, False)
