import Foundation

extension Responder {
  /// `GET /cpf/{cpf}` (cpfhub.io): the API key first, then the CPF's check digits, then the
  /// person.
  func cpfAnswer(_ cpf: String, request: MockHTTPRequest) -> Response {
    guard let key = request.headers["x-api-key"], cpfAPIKeys.contains(key) else {
      return cpfError(401, "Unauthorized")
    }
    guard isValidCPF(cpf) else { return cpfError(400, "CPF inválido") }
    guard let person = dataset.person(for: cpf) else {
      return cpfError(404, "CPF não encontrado")
    }
    return json(
      200,
      jsonObject([
        "success": .bool(true),
        "data": [
          "cpf": .string(person.cpf), "name": .string(person.name),
          "nameUpper": .string(person.nameUpper), "gender": .string(person.gender),
          "birthDate": .string(person.birthDate), "day": .int(person.day),
          "month": .int(person.month), "year": .int(person.year),
        ],
      ]))
  }

  private func cpfError(_ status: Int, _ text: String) -> Response {
    json(status, jsonObject(["success": .bool(false), "error": .string(text)]))
  }
}
