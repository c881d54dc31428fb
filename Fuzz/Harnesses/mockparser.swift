// Fuzz target: CepisMock's HTTP request parser answers complete, incomplete or invalid for
// any bytes, and never claims to consume more than it was given.
import CepisMock

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  switch MockHTTPRequest.parse(bytes) {
  case .complete(_, let consumed): precondition(consumed > 0 && consumed <= size)
  case .incomplete, .invalid: break
  }
  return 0
}
