extension KafkaStatistics {
    /// One report for several clients read as one (``KafkaGroupMembers``: a consumer per subscribed topic).
    ///
    /// - brokers: one entry per broker name; its request timeouts are the sum over the reports, and it is
    ///   `UP` only where every report that names it has it up (the first other state otherwise), so that a
    ///   connection down in any one client shows.
    /// - partitions: every report's, sorted; where two name the same partition, the first report's.
    /// - consumer group: `up` and `steady` only where every report says so (the first other state
    ///   otherwise); assignment sizes and rebalance counts are summed.
    /// - name: the names joined by `+`; time: the latest; queued messages: the sum.
    /// - Parameter reports: at least one report.
    /// - Returns: `nil` when `reports` is empty.
    public static func merging(_ reports: [KafkaStatistics]) -> KafkaStatistics? {
        guard let first = reports.first else { return nil }
        if reports.count == 1 { return first }
        var brokers: [String: Broker] = [:]
        var partitions: [TopicPartition: Partition] = [:]
        var group: ConsumerGroup?
        for report in reports {
            for broker in report.brokers {
                guard var known = brokers[broker.name] else {
                    brokers[broker.name] = broker
                    continue
                }
                known.requestTimeouts += broker.requestTimeouts
                if known.isUp && !broker.isUp { known.state = broker.state }
                brokers[broker.name] = known
            }
            for partition in report.partitions {
                let key = TopicPartition(topic: partition.topic, partition: partition.partition)
                if partitions[key] == nil { partitions[key] = partition }
            }
            if let cgrp = report.consumerGroup {
                guard var merged = group else {
                    group = cgrp
                    continue
                }
                if merged.state == "up" && cgrp.state != "up" { merged.state = cgrp.state }
                if merged.joinState == "steady" && cgrp.joinState != "steady" { merged.joinState = cgrp.joinState }
                merged.assignmentSize += cgrp.assignmentSize
                merged.rebalanceCount += cgrp.rebalanceCount
                group = merged
            }
        }
        return KafkaStatistics(
            clientName: reports.map(\.clientName).joined(separator: "+"), clientType: first.clientType,
            time: reports.map(\.time).max() ?? first.time, messagesQueued: reports.reduce(0) { $0 + $1.messagesQueued },
            brokers: brokers.values.sorted { $0.name < $1.name },
            partitions: partitions.values.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) },
            consumerGroup: group)
    }
}
