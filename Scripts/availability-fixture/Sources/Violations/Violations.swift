import Observation
import Synchronization

/// An explicit `next(isolation:)` on a generic iterator: macOS 15.
func firstElement<Rows: AsyncSequence>(
  of rows: Rows, isolation actor: isolated (any Actor)? = #isolation
) async throws -> Rows.Element? {
  var iterator = rows.makeAsyncIterator()
  return try await iterator.next(isolation: actor)  // expect: next(isolation:)
}

/// `Mutex`: macOS 15.
final class Counter: Sendable {
  let count = Mutex(0)  // expect: Mutex
}

/// `ContinuousClock`: macOS 13.
func elapsed() -> Double {
  let clock = ContinuousClock()  // expect: ContinuousClock
  _ = clock
  return 0
}

/// `@Observable` at macOS 10.15: the macro and what it expands to need macOS 14.
@Observable  // expect: Observable()
final class Model {
  var value = 0
}

/// `String(unsafeUninitializedCapacity:initializingUTF8With:)`: macOS 11.
func digits() -> String {
  String(unsafeUninitializedCapacity: 1) { buffer in  // expect: init(unsafeUninitializedCapacity:
    buffer[0] = UInt8(ascii: "1")
    return 1
  }
}

/// A guard for too old a version does not cover a newer API.
func tooOldAGuard() -> Int {
  if #available(macOS 11, iOS 14, tvOS 14, watchOS 7, *) {
    return Mutex(1).withLock { $0 }  // expect: Mutex
  }
  return 0
}

/// The `else` of a guard's `if` is not guarded.
func elseBranch() {
  if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
    _ = Mutex(0)
  } else {
    _ = ContinuousClock()  // expect: ContinuousClock
  }
}
