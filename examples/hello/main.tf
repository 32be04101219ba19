# The demo module: needs no provider download and no network, only tofu's built-in
# terraform_data resource.
variable "name" {
  type        = string
  default     = "world"
  description = "Who to greet."
}

resource "terraform_data" "greeting" {
  input = "hello, ${var.name}"
}

output "greeting" {
  value = terraform_data.greeting.output
}
