"""The fake Message Batches API (tests.fake_batches) driven by the real `anthropic` SDK, sync
and async: a batch's life, its results as configured, cancel, paging, validation, counts."""
from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx
import pytest

from tests.fake_anthropic import Failure, FakeAnthropic, ResultType, verdict_json
from tests.test_fake_anthropic import (
    async_client,
    batch_request,
    client,
    server,  # noqa: F401  (a fixture)
    wait_until,
)


def test_a_batch_runs_ends_and_serves_its_results(server: FakeAnthropic) -> None:
    sdk = client(server)
    server.configure({"batch_delay_s": 60, "batch_errors": {"r1": "errored", "r2": "expired", "r3": "invalid"}})
    created = sdk.messages.batches.create(requests=[batch_request(f"r{i}") for i in range(4)])
    assert created.id.startswith("msgbatch_fake_") and created.type == "message_batch"
    assert created.processing_status == "in_progress" and created.request_counts.processing == 4
    assert created.results_url is None and created.ended_at is None and created.expires_at > created.created_at
    assert sdk.messages.batches.retrieve(created.id).processing_status == "in_progress"
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        sdk.messages.batches.results(created.id)
    early = httpx.get(f"{server.url}/v1/messages/batches/{created.id}/results")
    assert early.status_code == 400

    server.end_batches()
    ended = sdk.messages.batches.retrieve(created.id)
    assert ended.processing_status == "ended" and ended.ended_at is not None
    counts = ended.request_counts
    assert (counts.processing, counts.succeeded, counts.errored, counts.expired, counts.canceled) == (0, 1, 2, 1, 0)
    results = {line.custom_id: line.result for line in sdk.messages.batches.results(created.id)}
    assert results["r0"].type == "succeeded" and results["r0"].message.content[0].text == verdict_json("A", "Always A.")
    assert results["r1"].type == "errored" and results["r1"].error.error.type == "api_error"
    assert results["r2"].type == "expired"
    assert results["r3"].type == "errored" and results["r3"].error.error.type == "invalid_request_error"
    assert [(r.custom_id, r.batch_id, r.status) for r in server.received] == [
        ("r0", created.id, 200), ("r1", created.id, 500), ("r3", created.id, 400)]  # fmt: skip
    stats = server.stats()
    assert (stats["requests"], stats["replies"], stats["batch_replies"], stats["batch_requests"]) == (0, 0, 1, 4)


def test_a_batch_ends_by_itself_after_its_delay(server: FakeAnthropic) -> None:
    sdk = client(server)
    server.configure({"batch_delay_s": 0.2})
    batch = sdk.messages.batches.create(requests=[batch_request("only")])
    wait_until(lambda: sdk.messages.batches.retrieve(batch.id).processing_status == "ended")
    assert [line.result.type for line in sdk.messages.batches.results(batch.id)] == ["succeeded"]


def test_batch_requests_use_the_live_machinery_in_order(server: FakeAnthropic) -> None:
    sdk = client(server)
    server.configure({"batch_delay_s": 60})
    batch = sdk.messages.batches.create(requests=[batch_request(f"q{i}") for i in range(3)])
    server.fail(Failure(529))
    server.queue_replies("No verdict here.")
    server.end_batches()
    results = [line.result for line in sdk.messages.batches.results(batch.id)]
    assert results[0].type == "errored" and results[0].error.error.type == "overloaded_error"
    assert results[1].message.content[0].text == "No verdict here."
    assert results[2].message.content[0].text == verdict_json("A", "Always A.")
    again = [line.result.type for line in sdk.messages.batches.results(batch.id)]
    assert again == ["errored", "succeeded", "succeeded"]  # fixed once computed
    assert server.stats()["pending_failures"] == 0


def test_planned_errors_are_transient_but_invalid_stays(server: FakeAnthropic) -> None:
    sdk = client(server)
    plans = {"a": "errored", "b": "invalid", "c": ["expired", "overloaded"]}
    server.configure({"batch_delay_s": 60, "batch_errors": plans})
    outcomes = []
    for _ in range(3):
        batch = sdk.messages.batches.create(requests=[batch_request(cid) for cid in "abc"])
        server.end_batches()
        outcomes.append({line.custom_id: line.result.type for line in sdk.messages.batches.results(batch.id)})
    assert outcomes == [{"a": "errored", "b": "errored", "c": "expired"},
                        {"a": "succeeded", "b": "errored", "c": "errored"},
                        {"a": "succeeded", "b": "errored", "c": "succeeded"}]  # fmt: skip
    assert server.batch_submissions() == {"a": 3, "b": 3, "c": 3}
    infos = server.batches()
    assert [info.custom_ids for info in infos] == [("a", "b", "c")] * 3
    assert infos[0].created_at < infos[1].created_at and infos[1].results["a"] is ResultType.SUCCEEDED


def test_batch_faults_replay_with_the_seed_and_hit_about_the_asked_share(server: FakeAnthropic) -> None:
    sdk = client(server)

    def run() -> list[str]:
        batch = sdk.messages.batches.create(requests=[batch_request(f"n{i}") for i in range(200)])
        server.end_batches()
        lines = list(sdk.messages.batches.results(batch.id))
        assert [line.custom_id for line in lines] == [f"n{i}" for i in range(200)]
        return ["malformed" if r.type == "succeeded" and "winner" not in r.message.content[0].text else r.type
                for r in (line.result for line in lines)]  # fmt: skip

    server.configure({"batch_delay_s": 60, "batch_fault_rate": 0.3, "fault_seed": 3})
    first = run()
    server.reset()
    again = run()
    server.configure({"fault_seed": 4})
    other = run()
    assert first == again and first != other
    assert 35 <= sum(kind != "succeeded" for kind in first) <= 85  # 60 expected
    assert {"errored", "expired", "malformed"} <= set(first)
    assert server.batch_submissions()["n0"] == 2  # the reset forgot the first run's


def test_a_canceled_batch_ends_with_its_requests_canceled(server: FakeAnthropic) -> None:
    sdk = client(server)
    server.configure({"batch_delay_s": 60, "batch_cancel_delay_s": 0.05})
    batch = sdk.messages.batches.create(requests=[batch_request("x"), batch_request("y")])
    canceling = sdk.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
    wait_until(lambda: sdk.messages.batches.retrieve(batch.id).processing_status == "ended")
    assert sdk.messages.batches.retrieve(batch.id).request_counts.canceled == 2
    assert [line.result.type for line in sdk.messages.batches.results(batch.id)] == ["canceled", "canceled"]
    with pytest.raises(anthropic.BadRequestError):
        sdk.messages.batches.cancel(batch.id)
    assert server.received == []  # nothing was answered
    assert sdk.messages.batches.delete(batch.id).type == "message_batch_deleted"
    with pytest.raises(anthropic.NotFoundError):
        sdk.messages.batches.retrieve(batch.id)


def test_batches_are_listed_newest_first_in_pages(server: FakeAnthropic) -> None:
    sdk = client(server)
    server.configure({"batch_delay_s": 60})
    ids = [sdk.messages.batches.create(requests=[batch_request(f"b{i}")]).id for i in range(5)]
    newest_first = ids[::-1]
    page = sdk.messages.batches.list(limit=2)
    assert [b.id for b in page.data] == newest_first[:2] and page.has_more
    assert (page.first_id, page.last_id) == (newest_first[0], newest_first[1])
    assert [b.id for b in sdk.messages.batches.list(limit=2)] == newest_first  # the SDK follows after_id
    assert [b.id for b in sdk.messages.batches.list(limit=2, after_id=newest_first[3]).data] == newest_first[4:]
    before = sdk.messages.batches.list(limit=2, before_id=newest_first[3])
    assert [b.id for b in before.data] == newest_first[1:3] and before.has_more
    with pytest.raises(anthropic.BadRequestError):
        sdk.messages.batches.list(limit=0)


@pytest.mark.parametrize(
    "requests",
    [
        [batch_request("same"), batch_request("same")],
        [batch_request("has space")],
        [batch_request("x" * 65)],
        [],
        [batch_request(f"r{i}") for i in range(4)],  # over batch_max_requests
        [{"custom_id": "no-params"}],
    ],
)
def test_invalid_batches_are_refused_whole(server: FakeAnthropic, requests: list[dict[str, Any]]) -> None:
    server.configure({"batch_max_requests": 3})
    with pytest.raises(anthropic.BadRequestError) as info:
        client(server).messages.batches.create(requests=requests)  # type: ignore[arg-type]
    assert info.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert server.batches() == [] and server.batch_submissions() == {}


def test_the_async_client_drives_batches(server: FakeAnthropic) -> None:
    async def run() -> tuple[list[str], list[str], str]:
        sdk = async_client(server)
        batch = await sdk.messages.batches.create(requests=[batch_request("p"), batch_request("q")])
        doomed = await sdk.messages.batches.create(requests=[batch_request("p")])
        status = (await sdk.messages.batches.cancel(doomed.id)).processing_status
        server.end_batches()
        assert (await sdk.messages.batches.retrieve(doomed.id)).request_counts.canceled == 1
        kinds = [line.result.type async for line in await sdk.messages.batches.results(batch.id)]
        listed = [b.id async for b in sdk.messages.batches.list(limit=1)]
        await sdk.close()
        return kinds, listed, status

    server.configure({"batch_delay_s": 60})
    kinds, listed, status = asyncio.run(run())
    assert kinds == ["succeeded", "succeeded"] and status == "canceling"
    assert listed == [info.id for info in reversed(server.batches())]
    assert server.batch_submissions() == {"p": 2, "q": 1}


def test_batches_need_the_api_key(server: FakeAnthropic) -> None:
    server.api_key = "right"
    with pytest.raises(anthropic.AuthenticationError):
        client(server).messages.batches.create(requests=[batch_request("k")])
    assert server.batches() == []
