# A module whose apply takes a while (a local-exec sleep): for cancellation, timeouts and lock
# tests.
variable "seconds" {
  type    = number
  default = 30
}

resource "terraform_data" "slow" {
  input = var.seconds

  provisioner "local-exec" {
    command = "echo berth-slow-started; sleep ${var.seconds}"
  }
}
