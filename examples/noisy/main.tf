# A module whose apply prints a lot and then fails: the result must stay valid and bounded.
variable "bytes" {
  type    = number
  default = 10000000
}

resource "terraform_data" "noisy" {
  provisioner "local-exec" {
    command = "yes 'berth noise line' | head -c ${var.bytes}; echo; echo berth-noisy-last-line; exit 3"
  }
}
