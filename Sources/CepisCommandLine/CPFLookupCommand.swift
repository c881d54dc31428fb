/// `cepis cpf lookup CPF`: through CPFHub (not available until the CPFHub client lands).
enum CPFLookupCommand {
  static func run(_ context: Context) async throws -> ExitStatus {
    _ = try context.format()
    context.console.error(
      "'cepis cpf lookup' is not available in this build (CPFHub client missing)")
    return .usage
  }
}
