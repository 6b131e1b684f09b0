// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "pushworker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushworker", targets: ["pushworker"]),
        .library(name: "PushWorkerAPI", targets: ["PushWorkerAPI"]),
        .library(name: "PushWorkerCore", targets: ["PushWorkerCore"]),
        .library(name: "PushWorkerKafka", targets: ["PushWorkerKafka"]),
        .library(name: "PushWorker", targets: ["PushWorker"]),
        .library(name: "PushWorkerCLI", targets: ["PushWorkerCLI"]),
        .library(name: "PushWorkerTesting", targets: ["PushWorkerTesting"]),
        .library(name: "PushWorkerProbe", targets: ["PushWorkerProbe"]),
        .library(name: "PushWorkerMetrics", targets: ["PushWorkerMetrics"]),
        .library(name: "PushWorkerEndpoints", targets: ["PushWorkerEndpoints"]),
    ],
    targets: [
        // librdkafka (Debian/Ubuntu `librdkafka-dev`), including the mock cluster header.
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"]), .brew(["librdkafka"])]
        ),
        // cJSON (Debian/Ubuntu `libcjson-dev`): the fast JSON parser on the per-record path.
        .systemLibrary(
            name: "CCJSON",
            pkgConfig: "libcjson",
            providers: [.apt(["libcjson-dev"]), .brew(["cjson"])]
        ),
        // libmicrohttpd (Debian/Ubuntu `libmicrohttpd-dev`): the HTTP server of /metrics, /healthz, /readyz.
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]
        ),
        // All C of librdkafka lives here (cJSON reads its statistics).
        .target(name: "PushWorkerKafka", dependencies: ["CRdKafka", "CCJSON"]),
        // The worker author's API: Worker, TypedWorker, ConfigurableWorker, Job, WorkerOutcome, WorkerRegistry,
        // WorkerSettings, TraceContext, JSONValue, the budgeted executor, the logger; re-exports PushWorkerMetrics
        // (workers' own metrics). The toolchain's modules only (no C, no FoundationNetworking), so a worker
        // package builds without any -dev package (.ci/check-worker-api.py).
        .target(name: "PushWorkerAPI", dependencies: ["PushWorkerMetrics"]),
        // Validation, dispatch, the built-in exec/http/noop workers: knows nothing of Kafka. Re-exports
        // PushWorkerAPI.
        .target(name: "PushWorkerCore", dependencies: ["PushWorkerAPI", "CCJSON", "CPushWorkerProcess"]),
        // The Linux calls of the exec worker's event loop that Swift's Glibc module does not import (epoll,
        // eventfd, pidfd_open, pidfd_send_signal, waitid on a pidfd, PR_SET_CHILD_SUBREAPER).
        .target(name: "CPushWorkerProcess"),
        // Prometheus metric types and the text exposition format: pure Swift, no dependencies.
        .target(name: "PushWorkerMetrics"),
        // All C of libmicrohttpd: a small GET/HEAD endpoint server.
        .target(name: "PushWorkerEndpoints", dependencies: ["CMicroHTTPD"]),
        // The service module (`import PushWorker`; its main type is PushWorkerService). Joins Kafka and the core: the pipeline, configuration, metrics and health. A library: it never writes
        // to stdout, never calls `exit` and never installs signal handlers.
        .target(name: "PushWorker", dependencies: ["PushWorkerKafka", "PushWorkerCore", "PushWorkerMetrics", "PushWorkerEndpoints"]),
        // The command line (`run`, `dev`, `produce`, `results`, `redrive`, `check-config`, `bench`): arguments,
        // stdout output, exit statuses and signal handling; custom executables build on `PushWorkerCommandLine`.
        .target(name: "PushWorkerCLI", dependencies: ["PushWorker", "PushWorkerKafka", "PushWorkerCore"]),
        // WorkerProbe: runs a worker under a budget with a hand-built job; needs only the worker API.
        .target(name: "PushWorkerProbe", dependencies: ["PushWorkerAPI"]),
        // Testing kit for worker authors (re-exports PushWorkerProbe).
        .target(name: "PushWorkerTesting", dependencies: ["PushWorkerProbe", "PushWorker", "PushWorkerKafka", "PushWorkerCore"]),
        // jemalloc (Debian/Ubuntu `libjemalloc-dev`) for the `pushworker` executable in release builds, with its
        // options (`malloc_conf`): a third less CPU per record than glibc's malloc in the benchmark
        // (docs/performance.md). Debug builds, and so the sanitizer and fuzzing builds, keep the C library's
        // malloc.
        .target(
            name: "CPushWorkerAllocator",
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux], configuration: .release))]
        ),
        .executableTarget(name: "pushworker", dependencies: ["PushWorkerCLI", "CPushWorkerAllocator"]),
        .testTarget(name: "PushWorkerCoreTests", dependencies: ["PushWorkerCore", "PushWorkerTesting"]),
        .testTarget(name: "PushWorkerKafkaTests", dependencies: ["PushWorkerKafka"]),
        .testTarget(name: "PushWorkerMetricsTests", dependencies: ["PushWorkerMetrics"]),
        .testTarget(name: "PushWorkerEndpointsTests", dependencies: ["PushWorkerEndpoints", "PushWorkerTesting"]),
        .testTarget(name: "PushWorkerTests", dependencies: ["PushWorker", "PushWorkerTesting", "PushWorkerMetrics"]),
        .testTarget(name: "PushWorkerCLITests", dependencies: ["PushWorkerCLI", "PushWorker", "PushWorkerKafka", "PushWorkerCore"]),
        // A pushworker with a Swift worker that crashes the process as its payload asks (the crash guard's
        // end-to-end tests run it); built with the tests, not a product.
        .executableTarget(name: "crashing-pushworker", dependencies: ["PushWorkerCLI", "PushWorkerCore"], path: "Tests/CrashingPushworker"),
        .testTarget(name: "EndToEndTests", dependencies: ["PushWorkerCore", "PushWorkerKafka", "PushWorkerTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
