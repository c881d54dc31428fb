#if AsyncHTTPClient
  import NIOCore

  /// One event loop as a task executor: a task that prefers it runs its nonisolated code on the
  /// loop's thread, where AsyncHTTPClient's `eventLoopGroup.any()` answers that loop, so the
  /// connection, the response's parts and the code reading them share one thread.
  ///
  /// Only code that never blocks runs here: starting a request and appending its body's parts.
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  final class EventLoopTaskExecutor: TaskExecutor {
    private let loop: any EventLoop

    /// An executor running its jobs on `loop`.
    init(_ loop: any EventLoop) {
      self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
      let job = UnownedJob(job)
      loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
  }
#endif
