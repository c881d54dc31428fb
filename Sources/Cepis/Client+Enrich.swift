import Foundation

// Entry points for `cepis enrich`, which plans its own chunks across a whole run (a run-wide
// memo, full chunks only) and so needs the batch endpoint one chunk at a time. `package`
// access: not API.

extension Client {
  /// Looks up one chunk of distinct CEP numbers (`1001000` for `01001-000`) in one batch
  /// request (plus its retries), through the same path as ``lookupMany(_:)``.
  ///
  /// The answer is in `numbers`' order: an address, or `nil` for a CEP that does not exist.
  /// Callers send at most ``maxBatch`` distinct numbers from `0...99_999_999`; a longer chunk
  /// is split into several requests rather than refused.
  ///
  /// - Throws: ``CepisError`` when the request still fails after its retries, or
  ///   `CancellationError`.
  package func lookupChunk(numbers: [Int]) async throws -> [Address?] {
    guard numbers.count > Self.maxBatch else {
      return try await fetchChunk(positionsOf: numbers.map(cepString))
    }
    var answers: [Address?] = []
    answers.reserveCapacity(numbers.count)
    for start in stride(from: 0, to: numbers.count, by: Self.maxBatch) {
      let part = numbers[start..<min(start + Self.maxBatch, numbers.count)]
      answers += try await fetchChunk(positionsOf: part.map(cepString))
    }
    return answers
  }
}
