import BrazilianDocuments
import Foundation
import Testing

@Suite("DocumentError")
struct DocumentErrorTests {
  @Test(
    "Each CPF failure names its cause",
    arguments: [
      ("3905334470", DocumentError.wrongLength(.cpf, expected: 11, actual: 10)),
      ("390.533.447-050", .wrongLength(.cpf, expected: 11, actual: 12)),
      ("", .wrongLength(.cpf, expected: 11, actual: 0)),
      ("390.533.447/05", .invalidCharacter(.cpf, "/", position: 12)),
      (" 390a53344705", .invalidCharacter(.cpf, "a", position: 5)),
      ("390.533.447-0é", .invalidCharacter(.cpf, "é", position: 14)),
      ("🇧🇷39053344705", .invalidCharacter(.cpf, "🇧🇷", position: 1)),
      ("39053344706", .checkDigitMismatch(.cpf, redacted: "***.533.447-**")),
      ("123.456.789-00", .checkDigitMismatch(.cpf, redacted: "***.456.789-**")),
      ("222.222.222-22", .repeatedSequence(.cpf, redacted: "***.222.222-**")),
    ])
  func cpfErrors(_ text: String, _ expected: DocumentError) {
    #expect(throws: expected) { try CPF(text) }
    #expect(expected.kind == .cpf)
  }

  @Test(
    "Each CNPJ failure names its cause",
    arguments: [
      ("12ABC34501DE3", DocumentError.wrongLength(.cnpj, expected: 14, actual: 13)),
      ("12ABC34501DE35A", .wrongLength(.cnpj, expected: 14, actual: 15)),
      ("12ABC34501DEA5", .invalidCharacter(.cnpj, "A", position: 13)),
      ("12.ABC.345/01DE-3b", .invalidCharacter(.cnpj, "b", position: 18)),
      ("12.ABC.345_01DE-35", .invalidCharacter(.cnpj, "_", position: 11)),
      ("12.ABC.345/01DE-36", .checkDigitMismatch(.cnpj, redacted: "**.ABC.345/01DE-**")),
      ("00.000.000/0000-00", .repeatedSequence(.cnpj, redacted: "**.000.000/0000-**")),
      ("77777777777777", .repeatedSequence(.cnpj, redacted: "**.777.777/7777-**")),
    ])
  func cnpjErrors(_ text: String, _ expected: DocumentError) {
    #expect(throws: expected) { try CNPJ(text) }
    #expect(expected.kind == .cnpj)
  }

  @Test("English messages for developers")
  func messages() {
    #expect(
      DocumentError.wrongLength(.cpf, expected: 11, actual: 10).message
        == "CPF must have 11 digits; found 10.")
    #expect(
      DocumentError.wrongLength(.cnpj, expected: 14, actual: 3).description
        == "CNPJ must have 14 characters; found 3.")
    #expect(
      DocumentError.invalidCharacter(.cpf, "\u{A0}", position: 4).message
        == "CPF cannot have \"\u{A0}\" (U+00A0) at position 4.")
    #expect(
      DocumentError.checkDigitMismatch(.cpf, redacted: "***.533.447-**").message
        == "CPF ***.533.447-** has check digits that do not match.")
    #expect(
      "\(DocumentError.repeatedSequence(.cpf, redacted: "***.111.111-**"))"
        == "CPF ***.111.111-** is a repeated-digit sequence, which is never issued.")
  }

  @Test("Portuguese descriptions for end users")
  func localized() {
    let mismatch = DocumentError.checkDigitMismatch(.cpf, redacted: "***.533.447-**")
    #expect(mismatch.errorDescription == "CPF inválido: dígitos verificadores não conferem.")
    #expect(mismatch.localizedDescription == "CPF inválido: dígitos verificadores não conferem.")
    #expect(
      DocumentError.wrongLength(.cnpj, expected: 14, actual: 12).errorDescription
        == "CNPJ inválido: deve ter 14 caracteres (foram informados 12).")
    #expect(
      DocumentError.invalidCharacter(.cnpj, "A", position: 13).errorDescription
        == "CNPJ inválido: o caractere “A” não é permitido na posição 13.")
    #expect(
      DocumentError.repeatedSequence(.cpf, redacted: "***.111.111-**").errorDescription
        == "CPF inválido: sequência de dígitos repetidos.")
  }

  @Test(
    "No error text contains the full CPF",
    arguments: ["39053344706", "390.533.447-06", "52998224726"])
  func errorsNeverLeak(_ text: String) {
    do {
      _ = try CPF(text)
      Issue.record("accepted an invalid CPF")
    } catch {
      let digits = text.filter(\.isNumber)
      var dumped = ""
      dump(error, to: &dumped)
      for output in [
        error.message, error.description, error.errorDescription ?? "",
        error.localizedDescription, "\(error)", String(reflecting: error), dumped,
      ] {
        #expect(!output.contains(digits), "\(output)")
        #expect(!output.contains(text), "\(output)")
      }
    }
  }
}
