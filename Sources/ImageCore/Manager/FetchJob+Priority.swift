// A download shared by several loads runs at the highest priority among them (issue 25, Nuke's
// `ImageTask.priority`): the job passes the loads' priorities on to its source operation when it adopts
// ``PrioritizableOperation``.
extension FetchJob {
    /// The priority subscriber `id`'s options ask for; nil when it no longer waits on this job.
    func optionsPriority(of id: UInt64) -> ImageLoadPriority? {
        state.withLock { state in
            state.machine.subscribers[id].map { ImageLoadPriority(options: $0.info.plan.options) }
        }
    }

    /// Gives the source operation the highest priority of the loads still waiting, when that changed.
    ///
    /// The call to the source happens outside the job's lock, so two refreshes may reach it out of order; each
    /// one repeats until the value it last sent is the current one, so the source always ends at the newest.
    func refreshSourcePriority() {
        var sent: ImageLoadPriority?
        while true {
            let update = state.withLock { state -> (any PrioritizableOperation, ImageLoadPriority)? in
                guard let source = state.runningSource as? any PrioritizableOperation else { return nil }
                var highest: ImageLoadPriority?
                for subscriber in state.machine.subscribers.values {
                    let priority =
                        subscriber.info.operation.explicitPriority
                        ?? ImageLoadPriority(options: subscriber.info.plan.options)
                    highest = max(highest ?? priority, priority)
                }
                guard let highest, highest != state.sourcePriority || (sent != nil && sent != highest) else {
                    return nil
                }
                state.sourcePriority = highest
                return (source, highest)
            }
            guard let (source, priority) = update else { return }
            source.priority = priority
            sent = priority
        }
    }
}
