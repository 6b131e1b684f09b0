// content-pushworker: pushworker's whole command line (run, dev, produce, results, check-config, bench)
// with one more worker type, `content-update`, written in Swift (ContentUpdateWorker).
//
// The worker's own settings come from the config file's `workerSettings."content-update"` section
// (ContentUpdateWorker.Settings: baseURL required, directory and requestTimeout optional); a missing or
// misspelt key stops run/dev/check-config/bench with the key's path. Its metric,
// content_server_responses_total, is served on /metrics beside the service's.
import ContentUpdateWorker
import Foundation
import PushWorkerCLI

// First, before any await: closed standard descriptors held, SIGTERM/SIGINT caught (see prepareProcess()).
PushWorkerCommandLine.prepareProcess()
let commandLine = PushWorkerCommandLine { registry, _ in
    let settings = try registry.settings(ContentUpdateWorker.Settings.self, section: "content-update")
    let responses = try ContentUpdateWorker.makeResponsesCounter(in: registry.metrics)
    // A Swift registration replaces a configured worker of the same type; budget and concurrency per type.
    registry.register(type: "content-update", worker: ContentUpdateWorker(settings: settings, responses: responses),
                      name: "swift:content-update", budget: .seconds(20), maxConcurrent: 64)
}
exit(await commandLine.main())
