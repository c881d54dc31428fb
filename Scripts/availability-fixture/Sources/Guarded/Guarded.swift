import Observation
import Synchronization

/// `next(isolation:)` where it exists, `next()` before.
func firstElement<Rows: AsyncSequence>(
  of rows: Rows, isolation actor: isolated (any Actor)? = #isolation
) async throws -> Rows.Element? {
  var iterator = rows.makeAsyncIterator()
  if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
    return try await iterator.next(isolation: actor)
  }
  return nil
}

/// A `for try await` loop: the compiler calls `next()` where `next(isolation:)` is missing.
func count<Rows: AsyncSequence>(_ rows: Rows) async throws -> Int {
  var count = 0
  for try await _ in rows { count += 1 }
  return count
}

/// A type marked for the systems that have `Mutex`.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class Counter: Sendable {
  let count = Mutex(0)
}

/// `guard #available` covers the rest of its block.
func elapsed() -> Double {
  guard #available(macOS 13, iOS 16, tvOS 16, watchOS 9, *) else { return 0 }
  let clock = ContinuousClock()
  _ = clock
  return 0
}

/// `@Observable` on a class marked for the systems that have Observation.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@Observable
final class Model {
  var value = 0
}

/// `&*` became a `FixedWidthInteger` requirement in Swift 6.0; the older extension member
/// serves old systems.
func scramble(_ value: UInt64) -> UInt64 {
  value &* 0x9E37_79B9_7F4A_7C15
}

/// An extension marked as a whole.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
extension Counter {
  func current() -> Int { count.withLock { $0 } }
}

/// In a `switch` case, a `guard #available` covers that case only.
func choose(_ choice: Int) -> Int {
  switch choice {
  case 0:
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return 0 }
    return Mutex(1).withLock { $0 }
  default:
    return 0
  }
}
