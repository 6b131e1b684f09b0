// `WorkerProbe` lives in PushWorkerProbe (usable with the worker API alone); the testing kit re-exports it.
@_exported import PushWorkerProbe
