// Fuzz target: the `enrich` memo. Fuzz bytes choose a capacity, the compaction thresholds and
// a sequence of inserts, recalls, re-inserts and evictions; `MemoModelDriver` (compiled in
// from the tests, see the line below) runs them on `EnrichMemo` and on its plain reference
// model and traps at the first difference: an answer for the wrong CEP, a CEP kept or
// forgotten when it should not be, a broken index or recency list.
// fuzz-sources: Tests/CepisCLITests/EnrichMemoModel.swift
@testable import CepisCommandLine

/// The fuzz input as a source of choices: two bytes a choice, little-endian.
struct FuzzChoices: MemoChoiceSource {
  let bytes: UnsafeBufferPointer<UInt8>
  var offset = 0

  mutating func next(below bound: Int) -> Int? {
    guard offset + 2 <= bytes.count else { return nil }
    let value = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
    offset += 2
    return value % bound
  }
}

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 2 else { return 0 }
  let capacities = [0, 1, 2, 3, 7, 64, 717, 1_000]
  let capacity = capacities[Int(data[0]) % capacities.count]
  // Small thresholds half the time, so that compactions and pool rebuilds happen within one
  // input.
  let small = data[1] & 1 == 1
  var driver = MemoModelDriver(
    capacity: capacity, streetSlack: small ? 64 : 1 << 20, poolSlack: small ? 2 : 1_024)
  var choices = FuzzChoices(bytes: UnsafeBufferPointer(start: data + 2, count: size - 2))
  if let failure = driver.run(&choices, limit: Int.max) {
    fatalError("enrich memo differs from its reference: \(failure)")
  }
  return 0
}
