// Workers register metrics of their own (`WorkerRegistry.metrics`): the metric types are part of the worker
// API's interface, so a worker package needs no other import. PushWorkerMetrics is pure Swift.
@_exported import PushWorkerMetrics
