# A module whose apply takes a while (a local-exec sleep): for cancellation, timeouts and lock
# tests. Each apply adds a line to the marker file, so a test can count how often it ran.
variable "seconds" {
  type    = number
  default = 30
}

variable "marker" {
  type        = string
  default     = "/dev/null"
  description = "A file that gets one line per apply."
}

resource "terraform_data" "slow" {
  input = var.seconds

  provisioner "local-exec" {
    command = "echo berth-slow-started; echo applied >> '${var.marker}'; sleep ${var.seconds}"
  }
}

output "seconds" {
  value = terraform_data.slow.output
}
