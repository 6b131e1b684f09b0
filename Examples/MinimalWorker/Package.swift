// swift-tools-version:6.0
// The smallest worker package: a Swift worker and its tests, on pushworker's worker API alone. It builds with
// the Swift toolchain only (no librdkafka, cJSON or libmicrohttpd -dev package): PushWorkerAPI and
// PushWorkerProbe have no C in their closure (CI checks it, .ci/check-worker-api.py).
import PackageDescription

let package = Package(
    name: "minimal-worker",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CachePurgeWorker", targets: ["CachePurgeWorker"]),
    ],
    dependencies: [
        // Here by path. In your own package (the repository has no tags yet):
        //   .package(url: "https://github.com/<owner>/pushworker.git", branch: "main")
        .package(name: "pushworker", path: "../.."),
    ],
    targets: [
        .target(name: "CachePurgeWorker", dependencies: [
            .product(name: "PushWorkerAPI", package: "pushworker"),
        ]),
        .testTarget(name: "CachePurgeWorkerTests", dependencies: [
            "CachePurgeWorker",
            .product(name: "PushWorkerAPI", package: "pushworker"),
            .product(name: "PushWorkerProbe", package: "pushworker"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
