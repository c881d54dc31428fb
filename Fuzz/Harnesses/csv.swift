// Fuzz target: the incremental CSV reader, fed the input in two pieces split at a point the
// input itself chooses; both feedings must agree with the one-shot read.
@testable import Cepis

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  let whole = try? CSVReader.records(in: bytes).map(\.fields)
  let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
  var reader = CSVReader(keepRawBytes: true, maxRecordBytes: 1 << 16)
  var pieces: [[String]]? = []
  do {
    reader.append(bytes[..<split])
    while let record = try reader.next() { pieces?.append(record.fields) }
    reader.append(bytes[split...])
    reader.finish()
    while let record = try reader.next() { pieces?.append(record.fields) }
  } catch {
    pieces = nil
  }
  if let whole, let pieces, whole != pieces, bytes.count < 1 << 16 {
    fatalError("incremental and one-shot reads disagree")
  }
  return 0
}
