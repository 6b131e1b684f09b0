import PushWorkerService
import Foundation

let status = await PushWorkerCommandLine().main()
exit(status)
