// Fuzz target: the `enrich` input path. `cepis enrich` copies every input record through as
// its raw bytes and terminator, so for any input the reader accepts, re-joining those pieces
// (with the BOM it skipped) must give back the input byte for byte: no row lost, split or
// altered. Inputs it rejects must be rejected with a CSVError, never a crash.
@testable import Cepis

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  var reader = CSVReader(keepRawBytes: true, maxRecordBytes: 1 << 16)
  // Feed in small chunks, as the tool does with 64 KiB reads, to exercise record boundaries.
  var rebuilt: [UInt8] = []
  var offset = 0
  do {
    while offset < input.count {
      let end = min(input.count, offset + 7)
      reader.append(input[offset..<end])
      offset = end
      while let record = try reader.next() { rebuilt += record.rawBytes + record.terminator }
    }
    reader.finish()
    while let record = try reader.next() { rebuilt += record.rawBytes + record.terminator }
  } catch is CSVError {
    return 0
  } catch {
    fatalError("unexpected error type \(error)")
  }
  let bom: [UInt8] = reader.sawByteOrderMark ? [0xEF, 0xBB, 0xBF] : []
  precondition(bom + rebuilt == input, "enrich would not copy the input through unchanged")
  return 0
}
