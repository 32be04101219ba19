# A module with a sensitive variable whose value tofu is made to print (nonsensitive): the
# runner must mask it anyway.
variable "token" {
  type      = string
  sensitive = true
}

resource "terraform_data" "uses_token" {
  input = nonsensitive("token is ${var.token}")
}

output "token_length" {
  value = length(nonsensitive(var.token))
}

output "token" {
  value     = var.token
  sensitive = true
}
