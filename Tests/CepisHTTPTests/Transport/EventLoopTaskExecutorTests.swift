#if AsyncHTTPClient
  import NIOCore
  import NIOPosix
  import Testing

  @testable import CepisHTTP

  /// What a transport on a caller's `HTTPClient` relies on: a task that prefers an
  /// ``EventLoopTaskExecutor`` runs on its loop, where the group's `any()` (which
  /// AsyncHTTPClient's async API asks for the request's loop) answers that loop, and not the
  /// group's next loop in turn.
  @Suite("EventLoopTaskExecutor: a caller's client's requests on one of its loops")
  struct EventLoopTaskExecutorTests {
    /// Task executors exist: Linux, macOS 15, iOS 18 and their peers (elsewhere the test is
    /// reported as skipped).
    static var hasTaskExecutors: Bool {
      if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) { return true }
      return false
    }

    @Test(
      "a task preferring the executor runs on its loop, which the group's any() then answers",
      .enabled(if: hasTaskExecutors))
    func runsOnItsLoop() async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      let group = MultiThreadedEventLoopGroup(numberOfThreads: 4)
      let loop = group.next()
      let executor = EventLoopTaskExecutor(loop)
      var pinned: [(onLoop: Bool, picked: Bool)] = []
      var unpinned: [Bool] = []
      for _ in 0..<20 {
        pinned.append(
          await Task(executorPreference: executor) {
            (loop.inEventLoop, group.any() === loop)
          }.value)
        // The same question from Swift's pool: the group hands out its loops in turn.
        unpinned.append(await Task { group.any() === loop }.value)
      }
      #expect(pinned.allSatisfy { $0.onLoop && $0.picked })
      #expect(unpinned.filter { $0 }.count <= 6)
      try await group.shutdownGracefully()
    }
  }
#endif
