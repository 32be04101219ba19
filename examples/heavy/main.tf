# A module on a provider with a large cloud provider's schema (berth's test provider built as
# berthheavy: 2000 resource types, 34,000 attributes): every TF process that loads provider
# schemas pays what it pays on a real cloud, so the benchmarks show what an extra one costs.
terraform {
  required_providers {
    berthheavy = {
      source  = "berth/berthheavy"
      version = "0.1.0"
    }
  }
}

variable "path" {
  type = string
}

variable "content" {
  type    = string
  default = "hello from berth"
}

resource "berthheavy_file" "this" {
  path    = var.path
  content = var.content
}

output "id" {
  value = berthheavy_file.this.id
}
