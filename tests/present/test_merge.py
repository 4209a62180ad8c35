"""Merging the ranks' results of a distributed run: each finding once with its ranks; files round-trip."""
from __future__ import annotations

from gradcheck_l2c.present.merge import RankResult, merge, rank_list, read_results, write_result
from gradcheck_l2c.present.textreport import format_report
from gradcheck_l2c.records import Finding, Related, WatchedTensor


def finding(tensor: str, line: int, count: int = 1) -> Finding:
    return Finding("ddp_unused", "error", tensor, "/abs/train.py", line, "self.aux = nn.Linear(8, 1)",
                   "message", "fix", count, (Related("/abs/train.py", 40, "symptom", "loss = model(x)"),))


def result(rank: int, findings: list[Finding], watched: list[WatchedTensor], failed: bool = False) -> RankResult:
    return RankResult(rank, 1 if failed else 0, failed, 100.0 + rank, "/abs/train.py", ["train.py"], findings,
                      watched)


def test_the_same_finding_on_two_ranks_is_listed_once_with_both_ranks():
    results = [
        result(0, [finding("Net.aux.weight", 12)], [WatchedTensor("Net.aux.weight", (1, 8), None)]),
        result(1, [finding("Net.aux.weight", 12, count=3), finding("Net.mid.weight", 9)],
               [WatchedTensor("Net.aux.weight", (1, 8), False)]),
    ]
    findings, watched = merge(results)
    assert [(f.tensor, f.ranks, f.count) for f in findings] == [("Net.aux.weight", (0, 1), 3),
                                                                ("Net.mid.weight", (1,), 1)]
    assert watched == [WatchedTensor("Net.aux.weight", (1, 8), False)]  # no gradient on any rank wins
    text = format_report(findings, watched)
    assert "1. /abs/train.py:12: error: ddp_unused (×3) [ranks 0, 1]\n" in text
    assert "error: ddp_unused [rank 1]: Net.mid.weight" in text
    assert findings[0].to_dict()["ranks"] == [0, 1]
    assert "ranks" not in finding("x", 1).to_dict()  # a single process's JSON is unchanged


def test_results_round_trip_through_the_run_folder(tmp_path):
    original = result(1, [finding("Net.aux.weight", 12)], [WatchedTensor("Net.aux.weight", (1, 8), True)], True)
    write_result(str(tmp_path), original)
    (tmp_path / "rank-2.json").write_text("{half a fil")  # a rank killed while writing: skipped
    assert read_results(str(tmp_path)) == [original]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank-1.json", "rank-2.json"]


def test_rank_lists_are_short():
    assert rank_list([1, 0]) == "0, 1"
    assert rank_list([0, 1, 2, 3]) == "0-3"
    assert rank_list([0, 2, 3]) == "0, 2, 3"


def test_a_finding_round_trips_through_its_dict_and_keeps_its_identity():
    merged = finding("Net.aux.weight", 12, count=2)
    merged = Finding.from_dict({**merged.to_dict(), "ranks": [0, 3]})
    assert merged.ranks == (0, 3) and merged.related == (Related("/abs/train.py", 40, "symptom"),)
    assert merged.key() == finding("Net.aux.weight", 12).key() != finding("Net.aux.weight", 13).key()
