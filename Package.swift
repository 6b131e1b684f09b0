// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "pushworker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushworker", targets: ["pushworker"]),
        .library(name: "PushWorkerCore", targets: ["PushWorkerCore"]),
        .library(name: "PushWorkerKafka", targets: ["PushWorkerKafka"]),
        .library(name: "PushWorkerService", targets: ["PushWorkerService"]),
        .library(name: "PushWorkerTesting", targets: ["PushWorkerTesting"]),
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
        // All C of librdkafka lives here.
        .target(name: "PushWorkerKafka", dependencies: ["CRdKafka"]),
        // Payloads, routing, budgets, results, built-in workers: knows nothing of Kafka.
        .target(name: "PushWorkerCore", dependencies: ["CCJSON"]),
        // Joins Kafka and the core: the pipeline, configuration and the command line.
        .target(name: "PushWorkerService", dependencies: ["PushWorkerKafka", "PushWorkerCore"]),
        // Testing kit for worker authors.
        .target(name: "PushWorkerTesting", dependencies: ["PushWorkerService", "PushWorkerKafka", "PushWorkerCore"]),
        .executableTarget(name: "pushworker", dependencies: ["PushWorkerService"]),
        .testTarget(name: "PushWorkerCoreTests", dependencies: ["PushWorkerCore", "PushWorkerTesting"]),
        .testTarget(name: "PushWorkerKafkaTests", dependencies: ["PushWorkerKafka"]),
        .testTarget(name: "PushWorkerServiceTests", dependencies: ["PushWorkerService", "PushWorkerTesting"]),
        .testTarget(name: "EndToEndTests", dependencies: ["PushWorkerKafka", "PushWorkerTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
