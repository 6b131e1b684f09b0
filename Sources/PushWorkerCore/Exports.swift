// The worker API (protocols, `Job`, outcomes, registry, logger) is part of the core's interface: code that
// imports PushWorkerCore keeps seeing it.
@_exported import PushWorkerAPI
