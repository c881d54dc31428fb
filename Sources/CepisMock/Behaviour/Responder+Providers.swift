import Foundation

extension Responder {
  /// `GET /ws/{cep}/json/`: ViaCEP takes exactly 8 digits (anything else is a 400 page) and
  /// answers an unknown CEP with 200 `{"erro": "true"}`.
  func viaCEPAnswer(_ text: String, booleanErro: Bool) -> Response {
    guard text.utf8.count == 8, let value = cepValue(text) else {
      return Response(
        status: 400, contentType: htmlType, body: .bytes(Providers.viaCEPBadRequestHTML))
    }
    guard let address = dataset.address(forValue: value) else {
      return Response(
        status: 200, contentType: jsonType, body: .bytes(Providers.viaCEPErro(boolean: booleanErro))
      )
    }
    return Response(status: 200, contentType: jsonType, body: .bytes(Providers.viaCEPJSON(address)))
  }

  /// `GET /api/cep/v2/{cep}`: BrasilAPI answers an unknown CEP with 404 `service_error`.
  func brasilAPIAnswer(_ text: String) -> Response {
    guard let value = cepValue(text) else {
      return Response(
        status: 400, contentType: jsonType, body: .bytes(Providers.brasilAPIValidationBody))
    }
    guard let address = dataset.address(forValue: value) else {
      return Response(
        status: 404, contentType: jsonType, body: .bytes(Providers.brasilAPINotFoundBody))
    }
    return Response(
      status: 200, contentType: jsonType, body: .bytes(Providers.brasilAPIJSON(address)))
  }
}
