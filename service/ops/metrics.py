"""`GET /metrics`: what joust is doing, in Prometheus's text format (prometheus-client).

Workers are separate processes, often on other machines, so their in-memory counters would be
invisible here. Instead every figure is read at scrape time from where the work leaves it:

- from RQ in Redis: jobs by state (`joust_queue_jobs`) and the age of the job at the head of
  the queue (`joust_queue_oldest_job_age_seconds`);
- from the store: matches and tournaments by status, and per judge its judgements, tokens in and
  out and USD spent (summed incrementally: judgements are written once, see `store.gauges`), and
  USD paid by attempts no judgement records;
- from the call counts the workers keep in Redis (`workers.callstats`, one hash,
  `Settings.call_stats_key`): per judge, calls by result (ok, rate_limited = 429/529, error),
  calls sent again, and the latency of answered calls, a histogram over CALL_LATENCY_BUCKETS.
  Redis is the one place every worker already writes to (the shared rate limit lives there),
  it survives a worker's restart, and it counts across machines, which prometheus-client's
  multiprocess mode (files in one directory of one machine) cannot;
- in this process (the API): HTTP requests by method, route template and status, with their
  duration, and the time taken to serve a board (`joust_board_seconds`, `cache` = "miss" when it
  was computed because judgements arrived since, "hit" when it came from memory).

Each app has its own `CollectorRegistry` (no global state: tests build several apps in one
process). A scrape costs a handful of indexed queries and Redis reads.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timezone
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from redis import Redis
from redis.exceptions import RedisError
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.config import CALL_LATENCY_BUCKETS, Settings
from service.store import JudgeTotals, Store
from service.store.queue import SERIALIZER

log = logging.getLogger(__name__)

# Fields of the workers' call-count hash (written by workers.callstats): "<kind>\x1f<judge>".
SEP = "\x1f"
CALL_RESULTS = ("ok", "rate_limited", "error")
UNRECORDED_TTL_S = 30.0  # the sum over every match is read at most this often
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BOARD_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def parse_call_stats(raw: dict[Any, Any]) -> dict[str, dict[str, float]]:
    """The workers' hash as {judge: {kind: value}} (kinds: calls:<result>, retries, pauses,
    circuit_opens, latency_sum, latency_count, latency_le:<bound>)."""
    found: dict[str, dict[str, float]] = {}
    for field, value in raw.items():
        field = field.decode() if isinstance(field, bytes) else str(field)
        kind, sep, judge = field.partition(SEP)
        if sep:
            found.setdefault(judge, {})[kind] = float(value)
    return found


def _bucket_name(bound: float) -> str:
    return repr(float(bound))


class JoustCollector(Collector):
    """The figures read at scrape time (see the module docstring)."""

    def __init__(self, settings: Settings, store: Store, redis: Redis, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.store = store
        self.redis = redis
        self.clock = clock
        self.queue = Queue(settings.queue_name, connection=redis, serializer=SERIALIZER)
        self._lock = threading.Lock()
        self._last_judgement = 0
        self._totals: dict[str, JudgeTotals] = {}
        self._unrecorded: tuple[float, float] | None = None  # (read at, USD)

    def describe(self) -> list[Metric]:
        return []  # collected at scrape time only (no store or Redis reads at registration)

    def collect(self) -> Iterator[Metric]:
        yield from self._store_metrics()
        try:
            yield from self._queue_metrics()
            yield from self._call_metrics()
        except RedisError as exc:  # the store's figures still go out; the queue's are missing
            log.warning("metrics: Redis unreachable: %s", exc)

    def _store_metrics(self) -> Iterator[Metric]:
        matches, tournaments = self.store.status_counts()
        g = GaugeMetricFamily("joust_matches", "Matches by status", labels=["status"])
        for status, n in sorted(matches.items()):
            g.add_metric([status], n)
        yield g
        g = GaugeMetricFamily("joust_tournaments", "Tournaments (and scheduled runs) by status", labels=["status"])
        for status, n in sorted(tournaments.items()):
            g.add_metric([status], n)
        yield g
        totals = self._judge_totals()
        made = CounterMetricFamily("joust_judgements", "Judgements stored, by judge", labels=["judge"])
        tokens = CounterMetricFamily("joust_judge_tokens", "Tokens of stored judgements, by judge and direction",
                                     labels=["judge", "direction"])
        usd = CounterMetricFamily("joust_judge_spent_usd", "USD the stored judgements cost, by judge",
                                  labels=["judge"])
        for judge, t in sorted(totals.items()):
            made.add_metric([judge], t.judgements)
            tokens.add_metric([judge, "input"], t.input_tokens)
            tokens.add_metric([judge, "output"], t.output_tokens)
            usd.add_metric([judge], t.cost_usd)
        yield made
        yield tokens
        yield usd
        yield CounterMetricFamily("joust_unrecorded_spent_usd", "USD paid by match attempts that no stored "
                                  "judgement records (failed attempts, a twin stored first)", value=self._unrecorded_usd())

    def _judge_totals(self) -> dict[str, JudgeTotals]:
        with self._lock:
            last, new = self.store.judgement_totals_since(self._last_judgement)
            for judge, t in new.items():
                self._totals[judge] = self._totals.get(judge, JudgeTotals()) + t
            self._last_judgement = last
            return dict(self._totals)

    def _unrecorded_usd(self) -> float:
        now = self.clock()
        with self._lock:
            if self._unrecorded is None or now - self._unrecorded[0] >= UNRECORDED_TTL_S:
                self._unrecorded = (now, self.store.unrecorded_spend())
            return self._unrecorded[1]

    def _queue_metrics(self) -> Iterator[Metric]:
        q = self.queue
        g = GaugeMetricFamily("joust_queue_jobs", "Jobs of the queue by state", labels=["queue", "state"])
        name = q.name
        g.add_metric([name, "queued"], q.count)
        g.add_metric([name, "started"], q.started_job_registry.count)
        g.add_metric([name, "scheduled"], q.scheduled_job_registry.count)
        g.add_metric([name, "failed"], q.failed_job_registry.count)
        yield g
        age = GaugeMetricFamily("joust_queue_oldest_job_age_seconds",
                                "Seconds since the job at the head of the queue was enqueued (0: empty)",
                                labels=["queue"])
        age.add_metric([name], self._oldest_age())
        yield age

    def _oldest_age(self) -> float:
        for job_id in self.queue.get_job_ids(0, 10):  # the head, skipping jobs deleted under it
            try:
                job = Job.fetch(job_id, connection=self.redis, serializer=SERIALIZER)
            except NoSuchJobError:
                continue
            if job.enqueued_at is not None:
                at = job.enqueued_at
                at = at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at
                return max(0.0, self.clock() - at.timestamp())
        return 0.0

    def _call_metrics(self) -> Iterator[Metric]:
        stats = parse_call_stats(self.redis.hgetall(self.settings.call_stats_key))
        calls = CounterMetricFamily("joust_judge_calls", "Calls sent to a judge by result (rate_limited: 429 "
                                    "or 529)", labels=["judge", "result"])
        retries = CounterMetricFamily("joust_judge_retries", "Calls sent again after the provider could not "
                                      "answer", labels=["judge"])
        pauses = CounterMetricFamily("joust_judge_pauses", "Pauses of every worker after a 429 or 529 "
                                     "(its retry-after, or overloads in a row)", labels=["judge"])
        opens = CounterMetricFamily("joust_judge_circuit_opens", "Times the judge's circuit breaker opened, "
                                    "or reopened after a failed probe", labels=["judge"])
        latency = HistogramMetricFamily("joust_judge_call_seconds", "Latency of the calls a judge answered",
                                        labels=["judge"])
        for judge, kinds in sorted(stats.items()):
            for result in CALL_RESULTS:
                calls.add_metric([judge, result], kinds.get(f"calls:{result}", 0.0))
            retries.add_metric([judge], kinds.get("retries", 0.0))
            pauses.add_metric([judge], kinds.get("pauses", 0.0))
            opens.add_metric([judge], kinds.get("circuit_opens", 0.0))
            cumulative, buckets = 0.0, []
            for bound in CALL_LATENCY_BUCKETS:
                cumulative += kinds.get(f"latency_le:{_bucket_name(bound)}", 0.0)
                buckets.append((_bucket_name(bound), cumulative))
            buckets.append(("+Inf", kinds.get("latency_count", 0.0)))
            latency.add_metric([judge], buckets, kinds.get("latency_sum", 0.0))
        yield calls
        yield retries
        yield pauses
        yield opens
        yield latency


class Metrics:
    """An app's registry: the scrape-time collector and the API's own HTTP and board figures."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.http_requests = Counter("joust_http_requests", "HTTP requests answered, by method, route and status",
                                     ["method", "route", "status"], registry=self.registry)
        self.http_seconds = Histogram("joust_http_request_seconds", "Time to answer an HTTP request, by route",
                                      ["method", "route"], buckets=HTTP_BUCKETS, registry=self.registry)
        self.board_seconds = Histogram("joust_board_seconds", "Time to serve a board or the effects fit "
                                       "(cache=miss: computed because judgements arrived since)",
                                       ["what", "cache"], buckets=BOARD_BUCKETS, registry=self.registry)
        self._collector: JoustCollector | None = None

    def attach(self, collector: JoustCollector) -> None:
        """Register the scrape-time collector (when the app's store and Redis are open)."""
        self.detach()
        self._collector = collector
        self.registry.register(collector)

    def detach(self) -> None:
        if self._collector is not None:
            self.registry.unregister(self._collector)
            self._collector = None

    def render(self) -> bytes:
        return generate_latest(self.registry)


def route_of(scope: Scope) -> str:
    """The route template a request matched ("/api/tournaments/{tournament_id}"), so that ids
    do not make a label each; "unmatched" for a 404."""
    route = scope.get("route")
    path = getattr(route, "path", None) or getattr(route, "path_format", None)
    return str(path) if path else "unmatched"


class HttpMetrics:
    """Count every HTTP request by method, route template and status, and time it."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            route, method = route_of(scope), scope.get("method", "")
            self.metrics.http_requests.labels(method, route, str(status)).inc()
            self.metrics.http_seconds.labels(method, route).observe(time.perf_counter() - started)


class TimedBoards:
    """The board cache (`service.usecases.boards.BoardCache`) with the time of each board and effects fit
    observed; any other attribute is the cache's own. A result newer than the last one served for
    the same arguments (or the first) was computed: cache "miss"."""

    TIMED = {"board": "board", "judged": "board", "judged_soon": "board", "bootstrapped": "bootstrap",
             "effects": "effects"}
    """The cache's methods timed, and the `what` label each is observed under (`judged` is a
    board with the judge chosen for it; `judged_soon` the pages', None while first computed)."""

    def __init__(self, boards: Any, histogram: Histogram) -> None:
        self._boards = boards
        self._histogram = histogram
        self._seen: dict[tuple, int] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._boards, name)
        if name not in self.TIMED:
            return found

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = found(*args, **kwargs)
            elapsed = time.perf_counter() - started
            key = (name, args, tuple(sorted(kwargs.items())))
            served = result[-1] if isinstance(result, tuple) else result  # judged: (choice, board)
            revision = getattr(served, "revision", None)
            with self._lock:
                miss = revision is None or self._seen.get(key, -1) < revision
                if revision is not None:
                    if len(self._seen) > 4096:
                        self._seen.clear()
                    self._seen[key] = revision
            self._histogram.labels(self.TIMED[name], "miss" if miss else "hit").observe(elapsed)
            return result

        return timed
