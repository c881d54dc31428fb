// Fuzz target: CPF and CNPJ parsing agree with isValid, and what parses formats and parses
// back to itself.
import BrazilianDocuments

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  let cpf = try? CPF(text)
  precondition((cpf != nil) == CPF.isValid(text))
  if let cpf {
    precondition((try? CPF(cpf.formatted)) == cpf)
    precondition(!cpf.redacted.contains(cpf.digits))
  }
  let cnpj = try? CNPJ(text)
  precondition((cnpj != nil) == CNPJ.isValid(text))
  if let cnpj { precondition((try? CNPJ(cnpj.formatted)) == cnpj) }
  return 0
}
