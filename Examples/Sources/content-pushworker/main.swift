// content-pushworker: pushworker's whole command line (run, dev, produce, results, check-config, bench)
// with one more worker type, `content-update`, written in Swift (ContentUpdateWorker).
//
// Settings of the worker's own come from the environment:
//   CONTENT_BASE_URL    required by run/dev/check-config/bench: where content lives (http or https URL)
//   CONTENT_DIRECTORY   optional: new content is written there, one file per contentId
import ContentUpdateWorker
import Foundation
import PushWorkerCLI

// First, before any await: closed standard descriptors held, SIGTERM/SIGINT caught (see prepareProcess()).
PushWorkerCommandLine.prepareProcess()
let commandLine = PushWorkerCommandLine { registry, _ in
    let environment = ProcessInfo.processInfo.environment
    let baseURL = try ContentSettings.baseURL(environment["CONTENT_BASE_URL"])
    let directory = environment["CONTENT_DIRECTORY"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
    let worker = ContentUpdateWorker(baseURL: baseURL) { contentId, body in
        guard let directory else { return }
        try ContentSettings.write(body, for: contentId, in: directory)
    }
    // A Swift registration replaces a configured worker of the same type; budget and concurrency per type.
    registry.register(type: "content-update", worker: worker, name: "swift:content-update",
                      budget: .seconds(20), maxConcurrent: 64)
}
exit(await commandLine.main())
