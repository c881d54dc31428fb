// Fuzz target: normalizeCEP accepts only what becomes 8 ASCII digits, and is idempotent.
@testable import Cepis

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  if let cep = try? normalizeCEP(text) {
    precondition(cep.utf8.count == 8 && cep.utf8.allSatisfy { $0 >= 48 && $0 <= 57 })
    precondition((try? normalizeCEP(cep)) == cep)
  }
  return 0
}
