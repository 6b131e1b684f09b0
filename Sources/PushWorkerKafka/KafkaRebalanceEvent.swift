/// A change of the partitions assigned to this member of the consumer group.
public enum KafkaRebalanceEvent: Sendable, Equatable {
    /// These partitions were just assigned (already applied with `rd_kafka_incremental_assign` or
    /// `rd_kafka_assign`): pause them here if the application is applying backpressure.
    case assigned([TopicPartition])
    /// These partitions are about to be revoked: finish or abandon their work and store their offsets
    /// now; they are unassigned when the handler returns (their stored offsets are then committed).
    case revoking([TopicPartition])
    /// These partitions were lost (`rd_kafka_assignment_lost`, e.g. the session timed out): another member
    /// may already own them, so their offsets must not be committed.
    case lost([TopicPartition])
}
