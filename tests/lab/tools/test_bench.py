"""scripts.bench's CPU accounting: the measured window only, processes born inside it included."""

from scripts.bench import cpu_between


def test_cpu_between_counts_each_process_from_its_first_look_and_a_newcomer_whole():
    before = {"api loop": {10: 1.0}, "api threads": {10: 0.5}, "postgres": {20: 2.0, 21: 0.1}}
    after = {
        "api loop": {10: 1.75},
        "api threads": {10: 0.75},
        # 22 is a backend the pool opened during the window; 21 exited (its last part is unknowable)
        "postgres": {20: 2.5, 22: 0.25},
    }
    assert cpu_between(before, after) == {"api loop": 0.75, "api threads": 0.25, "postgres": 0.75}
