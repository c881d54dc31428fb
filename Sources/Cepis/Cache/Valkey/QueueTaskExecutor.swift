#if Valkey
  import Dispatch

  /// A task executor on a serial dispatch queue of its own: the tasks that wait for a Valkey
  /// server's answers (and their continuations) run there, not on the cooperative pool, so a
  /// pool whose threads are all busy or blocked never holds up the cache's store.
  ///
  /// A serial queue's work runs on Dispatch's overcommitting threads, outside the pool's width.
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  final class QueueTaskExecutor: TaskExecutor {
    private let queue: DispatchQueue

    /// An executor on a new serial queue named `label`.
    init(label: String) {
      queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
      let job = UnownedJob(job)
      queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
  }
#endif
