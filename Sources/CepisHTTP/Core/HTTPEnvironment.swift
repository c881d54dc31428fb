import Foundation

/// The clock, sleeper and random source of the retry loop, injectable for tests.
///
/// Production code uses ``live``; unit tests substitute a sleeper that records the waits it
/// is asked for and a fixed random source, so backoff arithmetic is checked without sleeping.
package struct HTTPEnvironment: Sendable {
  /// Sleeps between attempts; throws `CancellationError` when the task is cancelled.
  package var sleep: @Sendable (TimeInterval) async throws -> Void
  /// A uniform draw from `0..<1` for full jitter.
  package var random: @Sendable () -> Double
  /// Wall-clock time, for `Retry-After` HTTP-dates.
  package var now: @Sendable () -> Date

  /// Creates an environment.
  package init(
    sleep: @escaping @Sendable (TimeInterval) async throws -> Void,
    random: @escaping @Sendable () -> Double,
    now: @escaping @Sendable () -> Date
  ) {
    self.sleep = sleep
    self.random = random
    self.now = now
  }

  /// Real sleeping, the system random generator, the system clock.
  package static let live = HTTPEnvironment(
    sleep: { seconds in try await sleepSeconds(seconds) },
    random: { Double.random(in: 0..<1) },
    now: { Date() }
  )
}

/// Sleeps for `seconds` on the continuous clock, throwing `CancellationError` promptly when
/// the task is cancelled.
package func sleepSeconds(_ seconds: TimeInterval) async throws {
  guard seconds > 0 else {
    try Task.checkCancellation()
    return
  }
  let nanoseconds = UInt64(min(seconds, 86_400 * 365) * 1_000_000_000)
  try await Task.sleep(nanoseconds: nanoseconds)
}

/// Seconds on a monotonic clock, for deadlines (never affected by wall-clock changes).
package func monotonicSeconds() -> TimeInterval {
  TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
}
