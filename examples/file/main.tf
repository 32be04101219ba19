# A module whose resource lives on the local disk (berth's test provider), so that tests can
# change the real world behind tofu's back (drift) or make it fail (an unwritable path).
terraform {
  required_providers {
    berthtest = {
      source  = "berth/berthtest"
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

resource "berthtest_file" "this" {
  path    = var.path
  content = var.content
}

output "id" {
  value = berthtest_file.this.id
}
