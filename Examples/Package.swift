// swift-tools-version:6.0
// A separate package that builds its own `pushworker` with a Swift worker, as a worker author would:
// it depends on the pushworker package (here by path; in your project by its git URL).
import PackageDescription

let package = Package(
    name: "pushworker-examples",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "content-pushworker", targets: ["content-pushworker"]),
        .executable(name: "pushworker-with-scheduler", targets: ["pushworker-with-scheduler"]),
        .library(name: "ContentUpdateWorker", targets: ["ContentUpdateWorker"]),
    ],
    dependencies: [
        // In your own package (the repository has no tags yet):
        //   .package(url: "https://github.com/<owner>/pushworker.git", branch: "main")
        .package(name: "pushworker", path: ".."),
    ],
    targets: [
        // The worker: fetches `contentId` over HTTP from a configured base URL.
        .target(name: "ContentUpdateWorker", dependencies: [
            .product(name: "PushWorkerCore", package: "pushworker"),
        ]),
        // A custom `pushworker`: the whole command line plus the content-update worker.
        .executableTarget(name: "content-pushworker", dependencies: [
            "ContentUpdateWorker",
            .product(name: "PushWorkerCLI", package: "pushworker"),
        ]),
        // The service beside a service of the application's own, under one signal handler.
        .executableTarget(name: "pushworker-with-scheduler", dependencies: [
            .product(name: "PushWorkerCLI", package: "pushworker"),
            .product(name: "PushWorker", package: "pushworker"),
        ]),
        .testTarget(name: "ContentUpdateWorkerTests", dependencies: [
            "ContentUpdateWorker",
            .product(name: "PushWorkerTesting", package: "pushworker"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
