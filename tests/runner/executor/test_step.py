"""Steps, identity, fingerprints and the graph: no Ray, no disk."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from runner.executor import Resources, Step, StepError, ref, this_output
from runner.executor.graph import GraphError, build_graph
from runner.executor.step import diff_payloads, output_path, parse_ref, substitute


class Cfg(BaseModel):
    src: str = ""
    n: int = 1


def noop(cfg: object, ctx: object) -> None:
    return None


def test_identity_and_output_path_have_no_hash() -> None:
    s = Step("data/tok", noop, Cfg(), version="2026.01.02")
    assert s.identity == "data/tok@2026.01.02"
    assert s.output_path("gs://b/x/") == "gs://b/x/data/tok/2026.01.02"


def test_fingerprint_ignores_prefix_and_resources_but_not_config() -> None:
    a = Step("a", noop, Cfg(n=1))
    same = Step("a", noop, Cfg(n=1), resources=Resources.tpu("v4-8", 4))
    other = Step("a", noop, Cfg(n=2))
    assert a.fingerprint == same.fingerprint
    assert a.fingerprint != other.fingerprint
    down1 = Step("b", noop, Cfg(src=a.output("x.txt")))
    assert "gs://" not in str(down1.fingerprint_payload) and down1.referenced == ["a@v1"]


def test_references_resolve_to_paths() -> None:
    assert parse_ref(ref("tok/x@v2", "train")) == ("tok/x@v2", "train")
    assert parse_ref(this_output("m.bin")) == ("self", "m.bin")
    got = substitute({"a": [ref("t@v1", "f")], "b": this_output()}, {"t@v1": "/p/t/v1", "self": "/p/me/v1"})
    assert got == {"a": ["/p/t/v1/f"], "b": "/p/me/v1"}
    assert output_path("/p/", "t@v1") == "/p/t/v1"


def test_drift_is_reported_field_by_field() -> None:
    old = Step("a", noop, Cfg(n=1)).fingerprint_payload
    new = Step("a", noop, Cfg(n=3)).fingerprint_payload
    assert diff_payloads(old, new) == ["config.n: 1 -> 3"]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"name": "bad name"}, "step name"),
        ({"name": "a", "version": "v/1"}, "version"),
        ({"name": "a", "fn": 3}, "not callable"),
        ({"name": "a", "config": object()}, "cannot be serialised"),
    ],
)
def test_bad_declarations_name_the_line(kwargs: dict, needle: str) -> None:
    with pytest.raises(StepError, match=needle) as err:
        Step(**{"fn": noop, **kwargs})
    assert "test_step.py:" in str(err.value)


def test_tpu_resources_are_ray_custom_resources() -> None:
    r = Resources.tpu("v4-8", chips=4)
    assert r.ray_options()["resources"] == {"TPU-v4-8-head": 1.0, "TPU": 4.0}
    assert r.flat()["TPU"] == 4.0


@dataclass(frozen=True)
class DC:
    path: str
    k: int = 0


def test_graph_order_dedupe_and_conflicts() -> None:
    a = Step("a", noop, DC("x"))
    a2 = Step("a", noop, DC("x"))  # same identity and config: one step
    b = Step("b", noop, DC(a.output()), deps=(a2,))
    c = Step("c", noop, DC(b.output()))
    g = build_graph([c])
    assert list(g.steps) == ["a@v1", "b@v1", "c@v1"]
    assert g.descendants("a@v1") == {"b@v1", "c@v1"}
    clash = Step("a", noop, DC("y"))
    with pytest.raises(
        GraphError, match=r"declared twice with different configs.*config.path: '[xy]' -> '[xy]'"
    ):
        build_graph([c, clash])


def test_cycle_is_reported_with_the_chain() -> None:
    x = Step("cyc/x", noop, DC(ref("cyc/y@v1")))
    y = Step("cyc/y", noop, DC(x.output()))
    x.output()  # make x findable by its reference too
    with pytest.raises(
        GraphError,
        match=r"dependency cycle: .*cyc/x@v1 -> cyc/y@v1 -> cyc/x@v1|cycle: cyc/y@v1 -> cyc/x@v1 -> cyc/y@v1",
    ):
        build_graph([y])


def test_dangling_reference_is_external() -> None:
    s = Step("e", noop, DC(ref("elsewhere/tok@v3", "train")))
    assert build_graph([s]).external == {"elsewhere/tok@v3": ["e@v1"]}


def test_train_run_ids_follow_the_launch() -> None:
    from runner.executor import StepContext
    from runner.steps.train import train_run_id

    def ctx(name: str) -> StepContext:
        return StepContext(name=name, version="v1", output_path="/x", run_id="olr-x-pr1-aaaaaaa-a1-0123456789",
                           dep_paths={})

    assert train_run_id(ctx("speedrun/tiny")) == "olr-x-pr1-aaaaaaa-a1-0123456789"  # the id the bot announced
    a, b = train_run_id(ctx("exp1/train_filtered")), train_run_id(ctx("exp1/train_baseline"))
    assert a != b and a.startswith("olr-x-pr1-aaaaaaa-a1-0123456789-exp1-train")
