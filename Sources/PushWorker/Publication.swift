import PushWorkerAPI
import PushWorkerCore
import PushWorkerKafka

/// One input record's outputs, as ``OutputPublisher/publish(_:)`` takes them in a batch: its result (with
/// its dead letter or its copy for the retry topic when there is one), or a copy for the retry topic that
/// stands in for its result for now (a scheduled push, a record following a retry of its key).
enum Publication: Sendable {
    /// A result, and the input record's dead letter or its copy for the retry topic, or neither.
    case result(ResultRecord, deadLetter: KafkaOutgoingRecord?, retry: KafkaOutgoingRecord?)
    /// A copy of the input record at `source` for the retry topic, without a result.
    case forward(KafkaOutgoingRecord, source: RecordSource)
}

extension OutputPublisher {
    /// Writes a batch of input records' outputs, one record after another (a publisher that can write a
    /// batch at once implements ``OutputPublisher/publish(_:)`` itself).
    func publishEach(_ batch: [Publication]) {
        for publication in batch {
            switch publication {
            case .result(let result, let deadLetter, let retry): publish(result, deadLetter: deadLetter, retry: retry)
            case .forward(let record, let source): forward(record, source: source)
            }
        }
    }
}
