//! Bad input gets a clear error, never a panic: each broken file below must
//! be refused with the right line, the right field path and a message that
//! says what is wrong.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::common::fuzz_cases;
use stormsim::load::{InputErrors, InputLimits, load};

fn dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-input");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(name: &str, text: &str) -> PathBuf {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn errors(name: &str, text: &str) -> InputErrors {
    load(&write(name, text), &InputLimits::default()).expect_err(name)
}

/// (file text, expected line, expected field path, a fragment of the message)
const CASES: &[(&str, usize, &str, &str)] = &[
    // Syntax.
    (
        "clock: { duration: 10s\nload: 1\n",
        2,
        "",
        "did not find expected",
    ),
    (
        "seed: 1\n  load: { rate: 5 }\n",
        2,
        "",
        "mapping values are not allowed",
    ),
    ("- a\n- b\n", 1, "", "an experiment is a mapping"),
    ("clock:\n\tduration: 5s\n", 2, "", "tab"),
    // Wrong types.
    ("seed: seven\n", 1, "seed", "invalid type: string \"seven\""),
    (
        "load: { rate: fast }\n",
        1,
        "load.rate",
        "invalid type: string \"fast\"",
    ),
    (
        "service:\n  pods: [8]\n",
        2,
        "service.pods",
        "invalid type: sequence",
    ),
    (
        "client:\n  retry:\n    max_retries: -1\n",
        3,
        "client.retry.max_retries",
        "integer `-1`, expected a whole number from 0 to 4294967295",
    ),
    (
        "clock: 5\n",
        1,
        "clock",
        "integer `5`, expected a mapping of its fields",
    ),
    (
        "client: { retry: { backoff: 5 } }\n",
        1,
        "client.retry.backoff",
        "expected one of `fixed`, `linear`, `exponential`, `envoy`",
    ),
    (
        "client: { retry: { retry_on: 5xx } }\n",
        1,
        "client.retry.retry_on",
        "string \"5xx\", expected a list (`[a, b]`, or `- ` items)",
    ),
    (
        "client: { total_deadline: 1s, attempt_timeout: 2s }\n",
        1,
        "client.attempt_timeout",
        ": 2s is longer than client.total_deadline (1s)",
    ),
    (
        "client: { retry: { backoff: { exponential: { base: 1s, cap: 100ms } } } }\n",
        1,
        "client.retry.backoff.exponential.cap",
        "100ms is below the base (1s)",
    ),
    (
        "load: { rate: fast }\n",
        1,
        "load.rate",
        "string \"fast\", expected a number",
    ),
    (
        "load: { rate: 1e400 }\n",
        1,
        "load.rate",
        "the number 1e400 is out of range: numbers go up to about 1.8e308",
    ),
    (
        "client: { propagate_deadline: yes }\n",
        1,
        "client.propagate_deadline",
        "string \"yes\", expected true or false",
    ),
    (
        "timeline:\n  - at: 5s\n    set: { param: load.rat, value: 2 }\n",
        3,
        "timeline[0].set.param",
        "did you mean `load.rate`?",
    ),
    (
        "upstream:\n  cancellation: maybe\n",
        2,
        "upstream.cancellation",
        "invalid type: string \"maybe\"",
    ),
    // Unknown fields, with suggestions.
    (
        "client:\n  retry:\n    max_retires: 3\n",
        3,
        "client.retry",
        "did you mean `max_retries`",
    ),
    (
        "upstream:\n  latancy: { constant: 1s }\n",
        2,
        "upstream",
        "did you mean `latency`",
    ),
    ("clocks: {}\n", 1, "", "unknown field `clocks`"),
    (
        "service:\n  pool: { max_conections: 5 }\n",
        2,
        "service.pool",
        "did you mean `max_connections`",
    ),
    // Durations.
    ("clock: { duration: 30 }\n", 1, "clock.duration", "no unit"),
    (
        "client:\n  attempt_timeout: 5 seconds\n",
        2,
        "client.attempt_timeout",
        "unknown unit",
    ),
    (
        "clock: { bucket: -1s }\n",
        1,
        "clock.bucket",
        "cannot be negative",
    ),
    (
        "services:\n  api:\n    endpoint_lag: soon\n",
        3,
        "services.api.endpoint_lag",
        "invalid duration \"soon\"",
    ),
    (
        "service:\n  autoscaling:\n    max_replicas: 4\n    shutdown: politely\n",
        4,
        "service.autoscaling.shutdown",
        "unknown variant `politely`, expected one of `drain`, `close`, `exit`",
    ),
    (
        "service:\n  pool:\n    streams_per_connection: 10\n    peer_idle_timeout: 60s\n",
        4,
        "service.pool.peer_idle_timeout",
        "a multiplexed pool's connections stay open",
    ),
    (
        "clock: { start: \"25:00:00\" }\n",
        1,
        "clock.start",
        "hours must be 0-23",
    ),
    // Out-of-range values and impossible combinations.
    (
        "upstream:\n  errors: { http_500: 1.5 }\n",
        2,
        "upstream.errors.http_500",
        "between 0 and 1",
    ),
    ("load: { rate: -3 }\n", 1, "load.rate", "non-negative rate"),
    (
        "client: { cost_per_attempt: .nan }\n",
        1,
        "client.cost_per_attempt",
        "non-negative amount",
    ),
    (
        "entry: api\nservices:\n  api:\n    calls:\n      - to: db\n        client: { cost_per_attempt: -3 }\ndependencies:\n  db: {}\n",
        6,
        "services.api.calls[0].client.cost_per_attempt",
        "non-negative amount, found -3",
    ),
    (
        "client:\n  attempt_timeout: 30s\n  total_deadline: 10s\n",
        2,
        "client.attempt_timeout",
        "longer than client.total_deadline",
    ),
    (
        "upstream:\n  latency: { log_normal: { median: 5s, p99: 2s } }\n",
        2,
        "upstream.latency.p99",
        "at least the median",
    ),
    ("service:\n  pods: 0\n", 2, "service.pods", "at least 1"),
    (
        "client:\n  hedging: { max_attempts: 9, delay: 1s }\n",
        2,
        "client.hedging.max_attempts",
        "2 to 5",
    ),
    (
        "client:\n  retry:\n    backoff: { exponential: { base: 1s, multiplier: 0.5 } }\n",
        3,
        "client.retry.backoff.multiplier",
        "at least 1",
    ),
    // Presets.
    (
        "client:\n  preset: grpc-a5\n",
        2,
        "client.preset",
        "did you mean \"grpc-a6\"",
    ),
    (
        "client:\n  preset: linkerd\n",
        2,
        "client.preset",
        "expected one of grpc-a6",
    ),
    // Timeline.
    (
        "timeline:\n  - at: 5m\n    set: { param: upstream.latency, value: 2 }\n",
        3,
        "timeline[0].set.param",
        "unknown variant `upstream.latency`",
    ),
    (
        "clock: { duration: 1m }\ntimeline:\n  - at: 5m\n    set: { param: load.rate, value: 2 }\n",
        3,
        "timeline[0].at",
        "after the end of the run",
    ),
    (
        "clock: { start: \"14:00:00\" }\ntimeline:\n  - at: \"13:59:00\"\n    set: { param: load.rate, value: 2 }\n",
        3,
        "timeline[0].at",
        "before the clock's start",
    ),
    (
        "timeline:\n  - at: 10s\n",
        2,
        "timeline[0]",
        "exactly one action",
    ),
    (
        "timeline:\n  - at: 10s\n    kill_pod: 12\n",
        3,
        "timeline[0].kill_pod",
        "does not exist",
    ),
    (
        "timeline:\n  - at: 10s\n    pod_fault: { pod: 8, errors: 1 }\n",
        3,
        "timeline[0].pod_fault.pod",
        "pod 8 does not exist (pods of the service are numbered from 0 to 7)",
    ),
    (
        "timeline:\n  - at: 10s\n    pod_fault: { pod: 1, errors: 1.5 }\n",
        3,
        "timeline[0].pod_fault.errors",
        "must be a share between 0 and 1, found 1.5",
    ),
    (
        "timeline:\n  - at: 10s\n    pod_fault: { pod: 1, errors: 1, for: 0s }\n",
        3,
        "timeline[0].pod_fault.for",
        "must be longer than 0s",
    ),
    (
        "timeline:\n  - at: 10s\n    pod_fault: { pod: 1 }\n",
        3,
        "timeline[0].pod_fault",
        "missing field `errors`",
    ),
    (
        "service:\n  outlier_detection: { max_ejection_percent: 120 }\n",
        2,
        "service.outlier_detection.max_ejection_percent",
        "must be a per cent from 0 to 100, found 120",
    ),
    (
        "service:\n  outlier_detection:\n    base_ejection_time: 60s\n    max_ejection_time: 30s\n",
        4,
        "service.outlier_detection.max_ejection_time",
        "must be at least base_ejection_time (1m), found 30s",
    ),
    (
        "service:\n  outlier_detection:\n    enforcing_failure_percentage: 100\n    failure_percentage_threshold: 185\n",
        4,
        "service.outlier_detection.failure_percentage_threshold",
        "must be a per cent from 0 to 100, found 185",
    ),
    (
        "client:\n  bulkhead:\n    max_concurrent: 50\n    adaptive: { backoff_ratio: 1 }\n",
        4,
        "client.bulkhead.adaptive.backoff_ratio",
        "must be from 0.5 to below 1 (Netflix's AIMDLimit requires it), found 1",
    ),
    (
        "client:\n  bulkhead:\n    max_concurrent: 10\n    adaptive: {}\n",
        4,
        "client.bulkhead.adaptive.initial_limit",
        "must lie from min_limit (20) to max_concurrent (10), found 20",
    ),
    (
        "service:\n  outlier_detection:\n    rules: grpc\n    consecutive_5xx: 5\n",
        4,
        "service.outlier_detection.consecutive_5xx",
        "gRPC's outlier detection has no consecutive-failure detector (rules: grpc): leave it out or set 0, found 5",
    ),
    (
        "service:\n  outlier_detection: { rules: linkerd }\n",
        2,
        "service.outlier_detection.rules",
        "unknown variant `linkerd`, expected `envoy` or `grpc`",
    ),
    (
        "service:\n  outlier_detection: { consecutive_5xxx: 3 }\n",
        2,
        "service.outlier_detection",
        "unknown field `consecutive_5xxx`",
    ),
    (
        "service:\n  outlier_detection: { interval: 0s }\n",
        2,
        "service.outlier_detection.interval",
        "",
    ),
    (
        "service:\n  workers: 10\n  autoscaling: { max_replicas: 6, metric: workers }\ntimeline:\n  - at: 10s\n    kill_pod: 12\n",
        6,
        "timeline[0].kill_pod",
        "pod 12 does not exist (pods of the service are numbered from 0 to 11)",
    ),
    (
        "service:\n  autoscaling: { min_replicas: 2 }\n",
        2,
        "service.autoscaling.max_replicas",
        "must be given: the most pods the autoscaler may run",
    ),
    (
        "service:\n  autoscaling: { max_replicas: 4 }\n",
        2,
        "service.autoscaling.metric",
        "cpu needs the service's `cores` (and its `work`) to measure",
    ),
    (
        "service:\n  autoscaling:\n    max_replicas: 4\n    metric: in_fligth\n",
        4,
        "service.autoscaling.metric",
        "unknown variant `in_fligth`, expected one of `cpu`, `workers`, `in_flight`, `requests`",
    ),
    (
        "service:\n  autoscaling:\n    max_replicas: 4\n    metric: in_flight\n    metrics:\n      - { metric: requests, target: 100 }\n",
        5,
        "service.autoscaling.metrics",
        "give either `metric` (and `target`) or `metrics`, not both",
    ),
    (
        "service:\n  workers: 10\n  autoscaling:\n    max_replicas: 4\n    metrics:\n      - { metric: requests, target: 100 }\n      - { metric: workers }\n      - { metric: requests }\n",
        8,
        "service.autoscaling.metrics[2].target",
        "must be given for requests: the requests a second a pod should take on average",
    ),
    (
        "service:\n  workers: 10\n  autoscaling:\n    max_replicas: 4\n    metrics:\n      - { metric: workers }\n      - { metric: workers, target: 50 }\n",
        7,
        "service.autoscaling.metrics[1].metric",
        "workers is listed twice",
    ),
    (
        "service:\n  autoscaling:\n    max_replicas: 4\n    metrics:\n      - { metric: requests, targte: 100 }\n",
        5,
        "service.autoscaling.metrics[0]",
        "unknown field `targte`",
    ),
    (
        "service:\n  workers: 10\n  autoscaling:\n    max_replicas: 4\n    metric: workers\n    scale_down:\n      policies:\n        - { type: pods, value: 1, period: 0s }\n",
        8,
        "service.autoscaling.scale_down.policies[0].period",
        "must be longer than 0s",
    ),
    (
        "service:\n  workers: 10\n  autoscaling: { max_replicas: 4, metric: workers }\ntimeline:\n  - at: 10s\n    set: { param: service.pods, value: 4 }\n",
        6,
        "timeline[0].set.value",
        "service.pods: the service's autoscaler sets its pods, between its min_replicas and max_replicas",
    ),
    (
        "service:\n  workers: 10\n  autoscaling: { max_replicas: 60000, metric: workers }\n",
        1,
        "service.pods",
        "120000 pods (twice the autoscaler's max_replicas: removed pods drain while added ones start), over the limit of 100000 (raise it with limits.max_pods)",
    ),
    // Sweeps.
    (
        "sweep:\n  axes:\n    - path: client.retry.max_retires\n      values: [1, 2]\n",
        3,
        "sweep.axes[0]",
        "unknown field `max_retires`",
    ),
    (
        "sweep:\n  axes:\n    - path: client.attempt_timeout\n      values: [1s, fast]\n",
        3,
        "sweep.axes[0]",
        "client.attempt_timeout: invalid duration \"fast\"",
    ),
    (
        "sweep:\n  axes:\n    - path: timeline[3].set.value\n      values: [1, 2]\n",
        3,
        "sweep.axes[0].path",
        "has 0 entries",
    ),
    (
        "sweep:\n  axes:\n    - path: load.rate\n      range: { from: 10, to: 1, step: 1 }\n",
        3,
        "sweep.axes[0]",
        "from ≤ to",
    ),
    (
        "sweep:\n  mode: zip\n  axes:\n    - { path: load.rate, values: [1, 2] }\n    - { path: service.pods, values: [1] }\n",
        5,
        "sweep.axes[1]",
        "equal length",
    ),
    (
        "sweep:\n  axes:\n    - path: service.pods\n      values: [4, 0]\n",
        3,
        "sweep.axes[0]",
        "at least 1",
    ),
    (
        "sweep:\n  axes:\n    - { path: seed, values: [1, 2] }\n",
        3,
        "sweep.axes[0].path",
        "sweep.replications",
    ),
    // Extends.
    (
        "extends: no-such-file.yaml\n",
        1,
        "extends",
        "is not a file",
    ),
    // Messages that say what is wrong (each once unclear).
    (
        "client:\n  retry:\n    max_retry: 3\n",
        3,
        "client.retry",
        "did you mean `max_retries`",
    ),
    (
        "seed: 18446744073709551616\n",
        1,
        "",
        "too large: whole numbers go up to 18446744073709551615",
    ),
    (
        "sweep:\n  axes:\n    - path: load.rate\n      log_range: { from: 1e-300, to: 1e300, count: 3 }\n",
        3,
        "sweep.axes[0]",
        "with load.rate = 1.0",
    ),
    (
        "clock: { duration: 100d, bucket: 1h }\nload: { rate: 1, closed_loop: { users: 100000, think: { constant: 1s } } }\nupstream: { background_rps: 200 }\n",
        1,
        "clock.duration",
        "open loop 1 requests/s, background 200 requests/s, 100000 closed-loop users",
    ),
    // Refused instead of accepted.
    (
        "outputs:\n  recovery: { tolerance: -0.1 }\n",
        2,
        "outputs.recovery.tolerance",
        "must be a fraction",
    ),
    (
        "outputs:\n  recovery:\n    smoothing: 0s\n",
        3,
        "outputs.recovery.smoothing",
        "longer than 0s",
    ),
    (
        "outputs:\n  recovery:\n    horizon: 0s\n",
        3,
        "outputs.recovery.horizon",
        "longer than 0s",
    ),
    (
        "client:\n  retry:\n    retry_on: [5xx, breaker_open]\n    backoff: { fixed: { delay: 0s } }\n",
        3,
        "client.retry.retry_on",
        "breaker_open needs a backoff that waits",
    ),
    (
        "client:\n  retry:\n    throttled_backoff: { linear: { base: 2s, cap: 1s } }\n",
        3,
        "client.retry.throttled_backoff.linear.cap",
        "below the base",
    ),
    (
        "client:\n  retry:\n    retry_after: { mode: at_least, resets_backoff: false }\n",
        3,
        "client.retry.retry_after.resets_backoff",
        "mode honor only, found mode at_least",
    ),
    (
        "client:\n  retry:\n    retry_after: { mode: honor, max_over_backoff: 5s }\n",
        3,
        "client.retry.retry_after.max_over_backoff",
        "bounds the wait of mode at_least only, found mode honor",
    ),
    (
        "client:\n  retry:\n    backoff: { linear: { base: 2s, cap: 1s } }\n",
        3,
        "client.retry.backoff.linear.cap",
        "below the base",
    ),
    ("name: 5\n", 1, "name", "must be a string, found a number"),
    ("seed: !big 1\n", 1, "seed", "YAML tags"),
    // Two documents in one file: where the second starts.
    (
        "# two\nseed: 1\n---\nseed: 2\n",
        3,
        "",
        "a second YAML document starts here",
    ),
    // A key given twice: the second one, its field, and where the first is.
    (
        "clock: { duration: 5s }\nload: { rate: 5 }\nclock: { bucket: 1s }\n",
        3,
        "clock",
        "given twice in one mapping (first at line 1, column 1)",
    ),
    (
        "client:\n  attempt_timeout: 1s\n  retry: { max_retries: 2 }\n  attempt_timeout: 2s\n",
        4,
        "client.attempt_timeout",
        "first at line 2, column 3",
    ),
    (
        "timeline:\n  - at: 5s\n    set: { param: load.rate, value: 2 }\n    at: 6s\n",
        4,
        "timeline[0].at",
        "first at line 2, column 5",
    ),
    // Work limits, each naming what raises it.
    (
        "service: { pods: 100000000 }\n",
        1,
        "service.pods",
        "limits.max_pods",
    ),
    (
        "clock: { duration: 1000000h }\n",
        1,
        "clock.duration",
        "limits.max_buckets",
    ),
    (
        "service:\n  health: { period: 1ns }\n",
        2,
        "service.health.period",
        "limits.max_events",
    ),
    (
        "clock: { duration: 1m }\nupstream: { background_rps: 100000000 }\n",
        1,
        "clock.duration",
        "background 1.000e8 requests/s",
    ),
    (
        "clock: { duration: 50m }\nupstream: { background_rps: 250000 }\nlimits: { max_events: 1000000000 }\n",
        2,
        "upstream.background_rps",
        "limits.max_events",
    ),
    (
        "sweep:\n  axes:\n    - path: load.rate\n      values: [10, 1e9]\n",
        3,
        "sweep.axes[0]",
        "--max-requests",
    ),
    (
        "objective:\n  success: 2\n",
        2,
        "objective.success",
        "between 0 and 1",
    ),
    (
        "objective:\n  order: [speed]\n",
        2,
        "objective.order[0]",
        "unknown variant `speed`",
    ),
    (
        "clock: { bucket: 1ms, window: 10m }\n",
        1,
        "clock.window",
        "limits.max_window_buckets",
    ),
    // Service graphs.
    (
        "entry: a\nservices:\n  a: { calls: [{ to: b }] }\n  b: { calls: [{ to: a }] }\n",
        3,
        "services.a.calls[0].to",
        "a cycle, a -> b -> a",
    ),
    (
        "entry: a\nservices:\n  a:\n    calls:\n      - to: mysq\n",
        5,
        "services.a.calls[0].to",
        "no service or dependency is called \"mysq\"",
    ),
    (
        "entry: api.v2\nservices:\n  api.v2: { calls: [{ to: db }] }\ndependencies:\n  db: {}\n",
        3,
        "services.api.v2",
        "\"api.v2\" contains \".\": a name may not contain",
    ),
    (
        "entry: front\nservices:\n  a: {}\n",
        1,
        "entry",
        "expected one of a",
    ),
    (
        "services:\n  a: {}\nclient: { attempt_timeout: 1s }\n",
        3,
        "client",
        "the single-tier format",
    ),
    (
        "entry: a\nservices:\n  a:\n    calls:\n      - parallel: [{ to: d }, { to: d }]\n        wait_for: 3\ndependencies:\n  d: {}\n",
        6,
        "services.a.calls[0].wait_for",
        "between 1 and the group's 2 calls",
    ),
    (
        "entry: a\nservices:\n  a: { calls: [{ to: d, client: { retry: { max_retries: 1 }, hedging: { max_attempts: 2, delay: 1s } } }] }\ndependencies:\n  d: {}\n",
        3,
        "services.a.calls[0].client.hedging",
        "set services.a.calls[0].client.retry.max_retries to 0",
    ),
    (
        "entry: a\nservices:\n  a: {}\ntimeline:\n  - at: 5s\n    set: { param: upstream.latency_scale, value: 2 }\n",
        6,
        "timeline[0].set.param",
        "dependencies.<name>.latency_scale",
    ),
    (
        "entry: a\nservices:\n  a: {}\ntimeline:\n  - at: 5s\n    set: { param: dependencies.nope.capacity, value: 2 }\n",
        6,
        "timeline[0].set.param",
        "no dependency is called \"nope\"",
    ),
    (
        "entry: a\nservices:\n  a: {}\n  b: {}\ntimeline:\n  - at: 5s\n    restart_pod: 0\n    service: c\n",
        8,
        "timeline[0].service",
        "no service is called \"c\" (services: a, b)",
    ),
    (
        "entry: a\nservices:\n  a: {}\n  b: { pods: 2 }\ntimeline:\n  - at: 5s\n    kill_pod: 2\n    service: b\n",
        7,
        "timeline[0].kill_pod",
        "pod 2 does not exist (pods of b are numbered from 0 to 1)",
    ),
    (
        "entry: a\nservices:\n  a: {}\ntimeline:\n  - at: 5s\n    set: { param: load.rate, value: 2 }\n    service: a\n",
        7,
        "timeline[0].service",
        "this entry has none",
    ),
    (
        "timeline:\n  - at: 5s\n    restart_pod: 0\n    service: app\n",
        4,
        "timeline[0].service",
        "the single tier has one service",
    ),
    (
        "entry: a\nservices:\n  a: { calls: [{ to: d }] }\ndependencies:\n  d: {}\ntimeline:\n  - at: 5s\n    deploy:\n      client: { retry: { max_retries: 0 } }\n",
        9,
        "timeline[0].deploy.client",
        "name the call whose client is deployed with call: (one of services.a.calls[0])",
    ),
    (
        "entry: a\nservices:\n  a: { calls: [{ to: d }] }\ndependencies:\n  d: {}\ntimeline:\n  - at: 5s\n    deploy:\n      call: services.a.calls[1]\n      client: { retry: { max_retries: 0 } }\n",
        9,
        "timeline[0].deploy.call",
        "one of services.a.calls[0]",
    ),
    (
        "entry: a\nservices:\n  a: { calls: [{ to: d }] }\ndependencies:\n  d: {}\ntimeline:\n  - at: 5s\n    deploy:\n      dependency: e\n      upstream: { capacity: 3 }\n",
        9,
        "timeline[0].deploy.dependency",
        "one of d",
    ),
    (
        "entry: a\nservices:\n  a: { calls: [{ to: d }] }\ndependencies:\n  d: {}\ntimeline:\n  - at: 5s\n    deploy:\n      call: services.a.calls[0]\n      client: { retry: { max_retries: 1 }, hedging: { max_attempts: 2, delay: 1s } }\n",
        10,
        "timeline[0].deploy.client.hedging",
        "retry.max_retries to 0",
    ),
    (
        "timeline:\n  - at: 5s\n    deploy:\n      call: services.a.calls[0]\n      client: { retry: { max_retries: 0 } }\n",
        4,
        "timeline[0].deploy.call",
        "the single tier has one client and one upstream",
    ),
    (
        "timeline:\n  - at: 5s\n    deploy:\n      client: { retry: { max_retries: 1 }, hedging: { max_attempts: 2, delay: 1s } }\n",
        4,
        "timeline[0].deploy.client.hedging",
        "set timeline[0].deploy.client.retry.max_retries to 0",
    ),
    // A sweep whose cells would repeat, or whose range is not a range.
    (
        "sweep:\n  axes:\n    - path: client.retry.max_retries\n      values: [1, 2, 1]\n",
        4,
        "sweep.axes[0].values[2]",
        "1 repeats values[0]: those cells would run twice under one id",
    ),
    (
        "sweep:\n  mode: zip\n  axes:\n    - path: client.retry.max_retries\n      values: [1, 1, 1]\n    - path: client.attempt_timeout\n      values: [1s, 2s, 1s]\n",
        5,
        "sweep.axes[0].values[2]",
        "the values at [2] of every axis repeat those at [0]",
    ),
    (
        "sweep:\n  axes:\n    - path: load.rate\n      range: { from: 1, to: 1.0000000000000002, step: 0.0000000000000001 }\n",
        3,
        "sweep.axes[0]",
        "1 repeats values[0]",
    ),
    (
        "sweep:\n  axes:\n    - path: client.attempt_timeout\n      values: [1s]\n    - path: client.attempt_timeout\n      values: [2s]\n",
        5,
        "sweep.axes[1].path",
        "also swept by sweep.axes[0]",
    ),
    (
        "sweep:\n  axes:\n    - path: client.attempt_timeout\n      range: { from: 1ms, to: 2ms, step: 0.4ns }\n",
        4,
        "sweep.axes[0].range.step",
        "invalid duration \"0.4ns\": finer than one nanosecond",
    ),
    (
        "sweep:\n  axes:\n    - path: client.attempt_timeout\n      range: { from: 1ms, to: 2ms, step: [1] }\n",
        4,
        "sweep.axes[0].range.step",
        "expected a number, or a duration with its unit",
    ),
    (
        "services:\n  a: { calls: [{ probability: 0.5, parallel: [{ to: d }, { to: d }] }] }\ndependencies: { d: {} }\nentry: a\n",
        2,
        "services.a.calls[0].probability",
        "a parallel group takes only `parallel` and `wait_for`",
    ),
    (
        "entry: a\nservices:\n  a:\n    calls:\n      - parallel: []\ndependencies: { d: {} }\n",
        5,
        "services.a.calls[0].to",
        "or lists the calls of a parallel group under `parallel:` (one at least)",
    ),
];

#[test]
fn each_broken_file_names_its_line_field_and_problem() {
    assert!(CASES.len() >= 25);
    let mut wrong = Vec::new();
    for (i, (text, line, path, fragment)) in CASES.iter().enumerate() {
        let name = format!("case-{i:02}.yaml");
        let errs = errors(&name, text);
        let e = &errs.0[0];
        let shown = errs.to_string();
        let ok = shown.contains(&name)
            && e.at.map(|a| a.0) == Some(*line)
            && (path.is_empty() || e.path.as_deref() == Some(*path))
            && shown.contains(fragment);
        if !ok {
            wrong.push(format!(
                "case {i} {text:?}: want line {line}, path {path:?}, {fragment:?}; got {shown}"
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// A file nested past the YAML parser's depth is one placed error that
/// says so, not the parser's "recursion limit exceeded".
#[test]
fn a_file_nested_too_deep_says_how_deep_is_allowed() {
    for (name, text) in [
        (
            "deep-flow.yaml",
            format!("name: x\nload: {}{}\n", "[".repeat(5000), "]".repeat(5000)),
        ),
        (
            "deep-map.yaml",
            format!(
                "name: x\nload: {}1{}\n",
                "{a: ".repeat(500),
                "}".repeat(500)
            ),
        ),
    ] {
        let errs = errors(name, &text);
        let shown = errs.to_string();
        assert_eq!(errs.0.len(), 1, "{shown}");
        assert_eq!(errs.0[0].at.map(|a| a.0), Some(2), "{shown}");
        assert!(
            shown.contains(&format!("{name}:2:"))
                && shown.contains("nested more than 128 levels deep"),
            "{shown}"
        );
    }
}

#[test]
fn limits_are_checked_before_any_work_and_name_their_flag() {
    // An alias bomb.
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
            p = i - 1
        ));
    }
    let e = errors("bomb.yaml", &bomb).to_string();
    assert!(e.contains("repetition limit") || e.contains("nodes"), "{e}");
    // 10^9 cells.
    let axis = "    - { path: load.rate, range: { from: 1, to: 1000, step: 1 } }\n";
    let cells = format!(
        "sweep:\n  axes:\n{axis}{}{}",
        axis.replace("load.rate", "upstream.latency_scale"),
        axis.replace("load.rate", "upstream.capacity")
    );
    let e = errors("cells.yaml", &cells).to_string();
    assert!(
        e.contains("1000000000 cells") && e.contains("--max-cells"),
        "{e}"
    );
    // Ten years at a million requests per second.
    let e = errors(
        "decade.yaml",
        "clock: { duration: 3650d, bucket: 1h }\nload: { rate: 1000000 }\n",
    )
    .to_string();
    assert!(
        e.contains("--max-requests") && e.contains("clock.duration"),
        "{e}"
    );
    // A file over the size limit.
    let big = write(
        "big.yaml",
        &format!("# {}\nseed: 1\n", "x".repeat(11 * 1024 * 1024)),
    );
    let e = load(&big, &InputLimits::default()).unwrap_err().to_string();
    assert!(e.contains("--max-file-size"), "{e}");
}

#[test]
fn a_timeline_that_raises_a_rate_counts_in_the_work_limits() {
    // 80 requests/s as written, 10^9 from the second minute: a run that
    // would grind until the event limit is refused before it starts, at
    // the entry that raises the rate.
    let base = "clock: { duration: 3m, bucket: 10s }\nload: { rate: 80 }\n";
    for (action, field) in [
        ("ramp: { param: load.rate, to: 1e9, over: 30s }", "ramp.to"),
        ("set: { param: load.rate, value: 1e9 }", "set.value"),
        (
            "pulse: { param: upstream.background_rps, value: 1e9, for: 10s }",
            "pulse.value",
        ),
    ] {
        let text = format!("{base}timeline:\n  - at: 1m\n    {action}\n");
        let errs = errors("rate-timeline.yaml", &text);
        assert_eq!(errs.0.len(), 1, "{errs}");
        let e = &errs.0[0];
        assert_eq!(
            e.path.as_deref(),
            Some(format!("timeline[0].{field}").as_str()),
            "{errs}"
        );
        assert_eq!(e.at.map(|(l, _)| l), Some(5), "{errs}");
        let m = errs.to_string();
        assert!(
            m.contains("--max-requests") && m.contains("on average as the timeline sets it"),
            "{m}"
        );
    }
    // The same rates for ten seconds of a pulse are within the limits,
    // counted as what they add: 80 × 180 + 10^6 × 10 requests.
    let text = format!(
        "{base}timeline:\n  - at: 1m\n    pulse: {{ param: load.rate, value: 1e6, for: 10s }}\n"
    );
    let path = write("rate-pulse.yaml", &text);
    let exp = load(&path, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
    let n = stormsim::load::requests_per_run(&exp.world);
    assert!((n - (80.0 * 170.0 + 1e6 * 10.0)).abs() < 1.0, "{n}");
}

#[test]
fn pods_the_timeline_adds_count_in_the_pod_and_event_limits() {
    // limits.max_pods counts the pods the timeline gives a service, as it
    // counts configured ones (in a graph, once more per call).
    for (text, path, said) in [
        (
            "timeline:\n  - at: 10s\n    set: { param: service.pods, value: 900000 }\n",
            "timeline[0].set.value",
            "service.pods: 900000 pods, over the limit of 100000 (raise it with limits.max_pods)",
        ),
        (
            "entry: api\nservices:\n  api:\n    calls:\n      - to: db\ndependencies:\n  db: {}\ntimeline:\n  - at: 10s\n    ramp: { param: services.api.pods, to: 60000, over: 5s }\n",
            "timeline[0].ramp.to",
            "120000 pods in the graph, each counted once and once more per call it makes",
        ),
        // Probes every millisecond of the 75,000 pods a timeline keeps
        // for 50 s of the minute make 4.5·10^9 events.
        (
            "clock: { duration: 60s }\nservice: { pods: 2, health: { period: 1ms } }\ntimeline:\n  - at: 10s\n    set: { param: service.pods, value: 90000 }\n",
            "service.health.period",
            "(75000 on average as the timeline sets them) every 1ms for 1m make at least 4.50e9 events",
        ),
    ] {
        let errs = errors("timeline-pods.yaml", text);
        assert_eq!(errs.0.len(), 1, "{errs}");
        assert_eq!(errs.0[0].path.as_deref(), Some(path), "{errs}");
        assert!(errs.to_string().contains(said), "{errs}");
    }
}

#[test]
fn a_log_range_never_leaks_nan_and_a_byte_order_mark_is_read_as_yaml_allows() {
    let e = errors(
        "log-range.yaml",
        "sweep:\n  axes:\n    - path: load.rate\n      log_range: { from: 1e-300, to: 1e300, count: 3 }\n",
    )
    .to_string();
    assert!(!e.to_lowercase().contains("nan"), "{e}");
    let bom = write("bom.yaml", "\u{feff}seed: 3\nclock: { duration: 5s }\n");
    let exp = load(&bom, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(exp.world.seed, 3);
}

#[test]
fn a_bucket_of_no_length_is_one_error_not_three() {
    // Counting the run's buckets at a bucket of 0 s would report billions
    // of them against two limits: noise after the one real error.
    let errs = errors(
        "zero-bucket.yaml",
        "clock: { duration: 10s, bucket: 0s }\nload: { rate: 100 }\n",
    );
    assert_eq!(errs.0.len(), 1, "{errs}");
    assert_eq!(errs.0[0].path.as_deref(), Some("clock.bucket"), "{errs}");
    assert!(
        errs.to_string().contains("must be longer than 0s"),
        "{errs}"
    );
}

#[test]
fn a_misspelt_axis_path_is_one_error_with_a_suggestion() {
    let errs = errors(
        "axis-typo.yaml",
        "sweep:\n  axes:\n    - path: client.retry.max_retrie\n      values: [1, 2, 3]\n",
    );
    assert_eq!(errs.0.len(), 1, "{errs}");
    let e = errs.to_string();
    assert!(
        e.contains("sweep.axes[0]") && e.contains("did you mean `max_retries`?"),
        "{e}"
    );
    // A value-dependent problem is still told per value.
    let errs = errors(
        "axis-values.yaml",
        "sweep:\n  axes:\n    - path: client.retry.max_retries\n      values: [1.5, 2.5]\n",
    );
    assert_eq!(errs.0.len(), 2, "{errs}");
    assert!(
        errs.to_string()
            .contains("`2.5`, expected a whole number from 0 to 4294967295"),
        "{errs}"
    );
    // A range is shown as written, not as a Rust value.
    let e = errors(
        "bad-range.yaml",
        "sweep:\n  axes:\n    - path: client.attempt_timeout\n      range: { from: 2s, to: 1s, step: 100ms }\n",
    )
    .to_string();
    assert!(e.contains("found from 2s, to 1s, step 100ms"), "{e}");
}

#[test]
fn a_misspelt_unknown_or_boundary_path_is_placed_where_it_is_written() {
    // Checked by `validate` (the sections' own checks), placed at the
    // unknown or the axis, not at the sweep.
    for (name, text, at, fragment) in [
        (
            "unknown-typo.yaml",
            "calibrate:\n  unknowns:\n    - path: upstream.capacty\n      range: [1, 5]\n  observed:\n    - { figure: peak_error_rate, range: [0.1, 0.4] }\n",
            "unknown-typo.yaml:3:5: calibrate.unknowns[0]: ",
            "did you mean `capacity`?",
        ),
        (
            "axis-typo.yaml",
            "timeline:\n  - at: 10s\n    pulse: { param: upstream.latency_scale, value: 3, for: 5s }\nboundary:\n  magnitude:\n    path: timeline[0].pulse.valu\n    values: [2, 3]\n  duration:\n    path: timeline[0].pulse.for\n    from: 1s\n    to: 5s\n  verdict: { figure: metastable }\n",
            "axis-typo.yaml:5:3: boundary.magnitude: ",
            "did you mean `value`?",
        ),
    ] {
        let path = write(name, text);
        let o = stormsim(&["validate", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(at) && err.contains(fragment), "{name}: {err}");
    }
}

#[test]
fn files_that_extend_each_other_in_a_cycle_are_named_in_order() {
    write("cycle-b.yaml", "seed: 2\nextends: cycle-a.yaml\n");
    let e = errors("cycle-a.yaml", "extends: cycle-b.yaml\n").to_string();
    assert!(
        e.contains("cycle-b.yaml:2:1: extends: files extend each other in a cycle: ")
            && e.contains("cycle-a.yaml -> ")
            && e.ends_with("cycle-a.yaml"),
        "{e}"
    );
}

#[test]
fn seven_axes_of_a_million_values_are_over_the_cell_limit_not_an_overflow() {
    let mut text = String::from("sweep:\n  axes:\n");
    for path in [
        "load.rate",
        "upstream.latency_scale",
        "upstream.capacity",
        "service.pods",
        "client.retry.max_retries",
        "upstream.background_rps",
        "upstream.queue_limit",
    ] {
        text.push_str(&format!(
            "    - {{ path: {path}, range: {{ from: 1, to: 1000000, step: 1 }} }}\n"
        ));
    }
    let o = stormsim(&["validate", write("seven.yaml", &text).to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("over the cell limit") && err.contains("--max-cells"),
        "{err}"
    );
}

#[test]
fn explain_answers_for_any_retry_count_the_loader_accepts() {
    for retries in ["4294967295", "100000000"] {
        let file = write(
            &format!("retries-{retries}.yaml"),
            &format!("client:\n  attempt_timeout: 1s\n  retry: {{ max_retries: {retries} }}\n"),
        );
        let o = stormsim(&["explain", file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        let attempts = format!("attempts per call: {}", 1 + retries.parse::<u64>().unwrap());
        assert!(text.contains(&attempts), "{text}");
        assert!(
            text.lines().count() < 200,
            "one line per retry: {} lines",
            text.lines().count()
        );
    }
}

#[test]
fn flags_out_of_range_are_refused_with_the_flag_named() {
    let file = write("flags.yaml", "clock: { duration: 5s }\n");
    let file = file.to_str().unwrap();
    let o = stormsim(&["validate", file, "--max-requests", "NaN"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--max-requests must be a number above 0"));
    let out = dir().join("threads-out");
    let o = stormsim(&[
        "run",
        file,
        "--quiet",
        "--threads",
        "100000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--threads 100000 is more than"));
    // The size limit counts the bytes read: a device that never ends is
    // refused after the first 1,001.
    let o = stormsim(&["validate", "/dev/zero", "--max-file-size", "1000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("over the limit of 1000 bytes"));
}

#[test]
fn locating_errors_is_linear_in_the_file() {
    // 20,000 timeline entries, each with an error: every one is located
    // (once quadratic: 2,000 took 23 s).
    let mut text = String::from("clock: { duration: 10m }\ntimeline:\n");
    for i in 0..20_000 {
        text.push_str(&format!(
            "  - at: {}s\n    set: {{ param: load.rate, value: -1 }}\n",
            i % 500 + 1
        ));
    }
    let errs = errors("many.yaml", &text);
    assert_eq!(errs.0.len(), 20_000);
    assert_eq!(errs.0[19_999].at, Some((40_002, 30)));
    assert_eq!(
        errs.0[19_999].path.as_deref(),
        Some("timeline[19999].set.value")
    );
}

fn stormsim(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stormsim"))
        .env("STORMSIM_CHECK_INVARIANTS", "true")
        .args(args)
        .output()
        .unwrap()
}

fn valid_experiment() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../experiments/policies/budget-and-breaker.yaml"),
    )
    .unwrap()
    .replace("extends: base.yaml\n", "")
}

/// Everything the commands do with a file before running it: load and
/// check it, list its cells, analyse its worst case. Must answer, never
/// panic or hang.
fn exercise(path: &Path) {
    if let Ok(exp) = load(path, &InputLimits::default()) {
        let _ = stormsim::sweep::cells(&exp);
        let _ = sim_models::policy::analysis::worst_case(&exp.world);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases()))]

    /// Random edits of a valid file (characters deleted, inserted or
    /// replaced) never panic the loader: it answers Ok or an error.
    #[test]
    fn mutated_files_never_panic(edits in proptest::collection::vec((any::<usize>(), 0u8..3, proptest::char::range(' ', '~')), 1..8)) {
        let mut text: Vec<char> = valid_experiment().chars().collect();
        for (pos, kind, c) in edits {
            let i = pos % (text.len() + 1);
            match kind {
                0 if i < text.len() => { text.remove(i); }
                1 => text.insert(i, c),
                _ if i < text.len() => text[i] = c,
                _ => {}
            }
        }
        let text: String = text.into_iter().collect();
        let path = write("mutated.yaml", &text);
        exercise(&path);
    }

    /// Random YAML-ish documents built from config words never panic.
    #[test]
    fn random_documents_never_panic(words in proptest::collection::vec(
        prop_oneof![
            Just("client:"), Just("retry:"), Just("max_retries: 3"), Just("- "), Just("  "), Just("\n"),
            Just("{"), Just("}"), Just("["), Just("]"), Just("&a "), Just("*a"), Just("5s"), Just("-1"),
            Just("timeline:"), Just("at: 1m"), Just("sweep:"), Just("axes:"), Just("path: load.rate"),
            Just("values: [1, 2]"), Just("extends: x.yaml"), Just("preset: envoy"), Just("\"14:00:00\""),
            Just("4294967295"), Just("18446744073709551616"), Just("1e308"), Just(".nan"), Just("-.inf"),
            Just("0"), Just("1ns"), Just("1000000h"), Just("service:"), Just("pods:"), Just("health:"),
            Just("period:"), Just("upstream:"), Just("background_rps:"), Just("clock:"), Just("bucket:"),
            Just("duration:"), Just("log_range: { from: 1e-300, to: 1e300, count: 3 }"), Just("!tag "),
            Just("range: { from: 1, to: 1000000, step: 1 }"), Just("outputs:"), Just("recovery:"),
            Just("gateway:"), Just("max_retries:"), Just("backoff:"), Just("linear: { base: 1s, cap: 1ms }"),
        ], 0..40)) {
        let text: String = words.concat();
        let path = write("random.yaml", &text);
        exercise(&path);
    }
}

/// Values at the edges of what a field allows, as YAML: what the loader
/// takes of them must run to its end or stop at a named limit.
const EDGES: &[(&str, &[&str])] = &[
    ("load.rate", &["0", "1e-9", "5000", "1e9"]),
    ("load.arrivals", &["poisson", "constant"]),
    ("upstream.capacity", &["0", "1", "10000000"]),
    ("upstream.queue_limit", &["0", "1", "10000000"]),
    ("upstream.latency_scale", &["0", "1e-9", "1e6"]),
    ("upstream.errors.http_500", &["0", "1"]),
    ("upstream.background_rps", &["0", "1e9"]),
    ("client.attempt_timeout", &["1ns", "1h", "null"]),
    ("client.retry.max_retries", &["0", "1000", "4294967295"]),
    (
        "client.retry.backoff",
        &["{ fixed: { delay: 0s } }", "{ fixed: { delay: 1ns } }"],
    ),
    ("service.pods", &["1", "1000"]),
    (
        "service.outlier_detection",
        &[
            "{}",
            "{ consecutive_5xx: 1, max_ejection_percent: 100, interval: 1ns, base_ejection_time: 1ns }",
            "{ base_ejection_time: 1000000h, max_ejection_time: 1000000h, always_eject_one_host: true, success_rate_minimum_hosts: 0, success_rate_request_volume: 0 }",
            "{ success_rate_stdev_factor: 1e300, enforcing_success_rate: 50, consecutive_5xx: 4294967295, healthy_panic_threshold: 100 }",
            "{ enforcing_failure_percentage: 100, failure_percentage_threshold: 0, failure_percentage_minimum_hosts: 0, failure_percentage_request_volume: 0, max_ejection_percent: 100 }",
            "{ enforcing_failure_percentage: 30, failure_percentage_threshold: 100, failure_percentage_minimum_hosts: 4294967295, failure_percentage_request_volume: 4294967295 }",
            "{ rules: grpc, enforcing_success_rate: 100, enforcing_failure_percentage: 100, failure_percentage_threshold: 0, max_ejection_percent: 100, success_rate_request_volume: 0, failure_percentage_request_volume: 0, success_rate_minimum_hosts: 0, failure_percentage_minimum_hosts: 0, interval: 1ns }",
        ],
    ),
    (
        "service.autoscaling",
        &[
            "{ max_replicas: 1, metric: in_flight, target: 1e-9 }",
            "{ max_replicas: 50000, metric: in_flight, target: 1e-9, sync_period: 15ns, startup: 0s, termination_grace: 0s }",
            "{ max_replicas: 1000, metric: in_flight, target: 1e9, sync_period: 15ns, tolerance: 0, scale_down: { stabilization_window: 0s } }",
            "{ max_replicas: 4294967295, min_replicas: 4294967295, metric: in_flight, target: 1 }",
            "{ max_replicas: 100, metric: in_flight, target: 1, scale_up: { policies: [{ type: percent, value: 4294967295, period: 1ns }] }, scale_down: { stabilization_window: 0s, policies: [{ type: pods, value: 4294967295, period: 1000000h }] } }",
            "{ max_replicas: 64, metric: in_flight, target: 0.5, startup: 1000000h, termination_grace: 1000000h, sync_period: 1000000h }",
            "{ min_replicas: 3, max_replicas: 3, metric: in_flight, target: 1, scale_up: { select: disabled, policies: [] }, scale_down: { select: min } }",
            "{ max_replicas: 8, metric: requests, target: 1e9, sync_period: 15ns, cpu_initialization_period: 1000000h, initial_readiness_delay: 1000000h }",
            "{ max_replicas: 1000, sync_period: 15ns, metrics: [{ metric: requests, target: 1e-9 }, { metric: in_flight, target: 1e9 }] }",
        ],
    ),
    ("service.pool.max_connections", &["1", "1000000"]),
    (
        "service.pool.max_pending",
        &["0", "1", "4294967295", "null"],
    ),
    (
        "service.pool.connect_time",
        &["{ constant: 0s }", "{ constant: 1h }"],
    ),
    ("gateway.deadline", &["1ns", "null"]),
    (
        "client.preset",
        &[
            "envoy",
            "istio",
            "finagle",
            "resilience4j",
            "grpc-a6-hedging",
            "aws-adaptive-2026",
            "dotnet-standard-resilience",
        ],
    ),
    (
        "client.hedging",
        &[
            "{ max_attempts: 2, delay: 0s }",
            "{ max_attempts: 50, delay: 1ns, non_fatal: [5xx, connect_failure] }",
            "null",
        ],
    ),
    (
        "client.retry.throttled_backoff",
        &[
            "{ fixed: { delay: 0s } }",
            "{ exponential: { base: 1ns, multiplier: 1e9, cap: 1000000h, jitter: full } }",
        ],
    ),
    (
        "client.retry.retry_after",
        &[
            "{ mode: at_least, max_over_backoff: 0s }",
            "{ mode: honor, cap: 1ns, resets_backoff: false }",
            "{ mode: at_least, cap: 1000000h, jitter: 1 }",
        ],
    ),
    (
        "client.retry.retry_on",
        &["[breaker_open, 5xx]", "[timeout]", "[]"],
    ),
    (
        "client.breaker",
        &[
            "{ resilience4j: { failure_rate_threshold: 1, minimum_number_of_calls: 1, sliding_window_size: 1 } }",
            "null",
        ],
    ),
    (
        "client.bulkhead",
        &[
            "{ max_concurrent: 1 }",
            "{ max_concurrent: 0 }",
            "{ max_concurrent: 4294967295, adaptive: { initial_limit: 4294967295, min_limit: 4294967295 } }",
            "{ max_concurrent: 1, max_queue: 0 }",
            "{ max_concurrent: 1, max_queue: 4294967295, max_wait: 1000000h }",
            "{ max_concurrent: 2, max_wait: 0s, adaptive: { min_limit: 1, initial_limit: 2, backoff_ratio: 0.5, timeout: 1ns } }",
            "{ max_concurrent: 1, max_wait: 1ns }",
            "null",
        ],
    ),
    (
        "client.budget",
        &[
            "{ finagle: { per_request_share: 0 } }",
            "{ finagle: { per_request_share: 1e9 } }",
            "{ aws_quota: { capacity: 0, throttled_cost: 0 } }",
            "{ grpc: { max_tokens: 1, token_ratio: 1e9 } }",
        ],
    ),
];

/// The bundled single-tier worlds the edges are set on.
const EDGE_BASES: &[&str] = &[
    "basics/steady.yaml",
    "basics/overload.yaml",
    "basics/load-and-users.yaml",
    "incidents/db-hiccup-4x.yaml",
];

/// `a.b.c` set to `v`, as nested YAML.
fn nested(path: &str, v: &str) -> String {
    let keys: Vec<&str> = path.split('.').collect();
    let mut text = String::new();
    for (depth, k) in keys.iter().enumerate() {
        let value = if depth + 1 == keys.len() { v } else { "" };
        text.push_str(&format!("{}{k}: {value}\n", "  ".repeat(depth)));
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases() / 5))]

    /// A bundled world with a few fields at their edges (each file of the
    /// chain setting one over the one before) is refused with an error,
    /// or runs: to its end, or to a limit it names. Never a panic or an
    /// overflow (the dev profile checks them), a broken invariant or a
    /// request unaccounted for at the end.
    #[test]
    fn worlds_at_their_edges_run_or_stop_at_a_named_limit(
        base in 0..EDGE_BASES.len(),
        edges in proptest::collection::vec((0..EDGES.len(), 0usize..8), 1..5),
    ) {
        let experiments = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
        let mut parent = experiments.join(EDGE_BASES[base]);
        let name = format!("edge-{base}-{}", edges.iter().map(|(k, v)| format!("{k}.{v}")).collect::<Vec<_>>().join("-"));
        for (i, &(knob, pick)) in edges.iter().enumerate() {
            let (path, values) = EDGES[knob];
            let text = format!("extends: {}\n{}", parent.display(), nested(path, values[pick % values.len()]));
            parent = write(&format!("{name}-{i}.yaml"), &text);
        }
        let file = write(
            &format!("{name}.yaml"),
            &format!("extends: {}\nlimits: {{ max_events: 300000, max_events_at_instant: 20000 }}\n", parent.display()),
        );
        let limits = InputLimits { max_requests: 1e6, ..InputLimits::default() };
        let Ok(exp) = load(&file, &limits) else {
            return Ok(());
        };
        match sim_models::world::run(&exp.world, sim_models::recorder::Discard::default()) {
            Ok(_) => {}
            Err(sim_models::world::WorldError::Run { failure, .. }) => {
                use sim_models::world::RunFailure;
                prop_assert!(
                    matches!(failure, RunFailure::Engine { .. } | RunFailure::Limit(_)),
                    "{}: {failure}",
                    file.display()
                );
                let said = failure.to_string();
                prop_assert!(said.contains("raise"), "{said}");
            }
            Err(e) => prop_assert!(false, "{}: {e}", file.display()),
        }
    }
}
