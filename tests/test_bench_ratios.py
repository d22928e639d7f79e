"""The bench's ratio logic (scripts/bench.py), on made-up measurements: no timing here."""
from scripts import bench


def _case(name, ours_ms, tv_ms, ops, leaves=2):
    return {"case": name, "ours_ms": ours_ms, "torchviz_ms": tv_ms, "ratio": ours_ms / tv_ms,
            "ours_shows": {"ops": ops, "leaves": leaves}}


def test_growth_is_time_per_node_at_chain_400_over_chain_100():
    linear = [_case("chain 100", 20.3, 25.0, 201), _case("chain 400", 80.3, 100.0, 801)]
    assert abs(bench.per_node_growth(linear) - 1.0) < 1e-9        # 0.1 ms a node at both sizes
    quadratic = [_case("chain 100", 20.3, 25.0, 201), _case("chain 400", 321.2, 100.0, 801)]
    assert abs(bench.per_node_growth(quadratic) - 4.0) < 1e-9     # 4x the nodes, 16x the time
    assert bench.per_node_growth([_case("chain 10", 1, 1, 21)]) is None


def test_ratio_problems_name_each_missed_target_and_only_those():
    good = {"renderer": {"cases": [_case("chain 100", 9, 10, 201)], "growth": 1.1},
            "watch": {"ratio": 1.8}}
    assert bench.ratio_problems(good) == []
    bad = {"renderer": {"cases": [_case("chain 100", 20, 10, 201), _case("small CNN", 1, 1, 11)],
                        "growth": 2.5},
           "watch": {"ratio": 5.4}}
    problems = bench.ratio_problems(bad)
    assert len(problems) == 3
    assert "chain 100: 2.00 x torchviz" in problems[0]
    assert "grows 2.50 x" in problems[1]
    assert "watch: 5.40 x" in problems[2]
    # the margin: 1.4 x torchviz, 1.7 x growth and 2.9 x a backward are reported in the table, not failed
    margin = {"renderer": {"cases": [_case("c", 14, 10, 5)], "growth": 1.7}, "watch": {"ratio": 2.9}}
    assert bench.ratio_problems(margin) == []


def test_the_report_prints_the_growth_and_the_watch_ratio():
    res = {"renderer": {"cases": [], "special": [{"case": "x", "ours_ms": 1.0, "ours": "a", "torchviz": "b"}],
                        "growth": 1.05},
           "watch": {"nodes": 19983, "sizes": "(16, 32) @ (32, 32)", "backward_ms": 200.0,
                     "watch_ms": 380.0, "shown_ms": 90.0, "ratio": 1.9}}
    res["renderer"]["cases"] = [{**_case("chain 100", 9, 10, 201), "ours_layout_ms": 1.0,
                                 "torchviz_layout_ms": 2.0, "torchviz_shows": {"nodes": 5, "saved": 1},
                                 "ours_shows": {"ops": 201, "leaves": 2, "saved": 3, "saved_bytes": 4,
                                                "values": 5}}]
    text = bench.report(res)
    assert "chain 400 / chain 100: 1.05 x" in text
    assert "19,983 nodes" in text and "ratio 1.90 x" in text


def test_the_zoo_part_reports_every_picture_of_a_model_run_in_its_own_process():
    """bench --only zoo (issue 28 §4): one row per default picture with its seconds (wall and CPU),
    px and height, the pair's backward apart; the report's table and its count of pictures over the
    target. The shape only: no time is checked (a hang guard is the subprocess's own limit)."""
    from tests.model_zoo import PICTURES

    res = {"zoo": bench.zoo_bench(["gnn"])}
    rows = res["zoo"]["rows"]
    assert [r["picture"] for r in rows] == list(PICTURES) and all(r["model"] == "gnn" for r in rows)
    for r in rows:
        assert r["seconds"] >= 0 and r["cpu_s"] >= 0 and r["text_px"] > 0 and r["height_px"] > 0
        assert (r["backward_s"] is not None) == (r["picture"] == "pair")
    text = bench.report(res)
    assert "| gnn   | after_view |" in text and "CPU s" in text
    assert f"of {len(PICTURES)} pictures in wall time" in text
    slow = {"zoo": {**res["zoo"], "rows": [{**rows[0], "seconds": 9.0}, *rows[1:]]}}
    assert any("zoo gnn draw: 9.00 s" in p for p in bench.check(slow))
