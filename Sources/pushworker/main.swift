import Foundation
import PushWorkerCLI

// First, before any await: standard descriptors and signals (see PushWorkerCommandLine.prepareProcess()).
PushWorkerCommandLine.prepareProcess()
let status = await PushWorkerCommandLine().main()
exit(status)
