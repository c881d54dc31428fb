// Fuzz target: Address and Health decoding, and the batch answer decoder, must either decode
// or throw — never crash, and never yield an address whose CEP is not 8 digits.
import Foundation

@testable import Cepis

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let body = Data(UnsafeBufferPointer(start: data, count: size))
  if let address = try? JSONDecoder().decode(Address.self, from: body) {
    precondition(address.cep.utf8.count == 8 && address.cep.utf8.allSatisfy { $0 >= 48 && $0 <= 57 })
  }
  _ = try? JSONDecoder().decode(Health.self, from: body)
  let requested: Set<String> = ["01001000", "20040002", "70040010"]
  if let rows = try? Client.decodeBatchRows(body, requested: requested) {
    precondition(Set(rows.keys).isSubset(of: requested))
    for (cep, address) in rows { precondition(address.cep == cep && !address.localidade.isEmpty) }
  }
  return 0
}
